// Already-quantized (QDQ / QAT) ONNX models for Python: import_qdq strips a loaded model's Q/DQ
// nodes into a float Model that carries the given parameters, quantize_given builds the INT8
// simulator from them (docs/qdq_import.md).
#include <pybind11/stl.h>

#include <set>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "bindings/quantized_model.h"
#include "common/error.h"
#include "frontend/error_prefix.h"
#include "frontend/import_options.h"
#include "frontend/onnx_import.h"
#include "frontend/shape_inference.h"
#include "opset/custom_ops.h"
#include "quant/graph/given_params.h"
#include "quant/graph/op_quant_class.h"
#include "quant/graph/qdq_import.h"
#include "quant/graph/quantizer.h"

namespace npuc::bindings {

namespace {

// Parses without the inference tail, strips a QDQ model's Q/DQ nodes while the weights are still
// integer initializers, then runs the tail (shape inference and folding, static shapes, op
// support) as Model.load does.
py::tuple loadOnnx(const py::object& source, const std::vector<std::string>& input_names,
                   const std::vector<std::vector<int64_t>>& input_sizes,
                   const std::vector<std::string>& output_names, std::shared_ptr<CustomOpSet> custom_ops,
                   bool strict) {
  std::string not_imported;
  ImportOptions opts;
  opts.custom_ops = std::move(custom_ops);
  opts.input_names = input_names;
  opts.input_sizes.assign(input_sizes.begin(), input_sizes.end());
  opts.output_names = output_names;
  opts.infer_shapes = false;
  const bool bytes = py::isinstance<py::bytes>(source);
  const std::string text = bytes ? std::string(py::bytes(source)) : py::str(source).cast<std::string>();
  std::shared_ptr<quant::QdqImport> imp;
  std::unique_ptr<Graph> g;
  {
    py::gil_scoped_release release;
    g = bytes ? importOnnxBytes(text, opts) : importOnnxFile(text, opts);
    try {
      if (quant::isQdqModel(*g)) {
        // On a copy: a pattern npuc cannot map leaves the model as it was (its Q/DQ nodes run as
        // ops), unless strict.
        std::unique_ptr<Graph> copy = g->clone();
        try {
          imp = std::make_shared<quant::QdqImport>(quant::stripQdq(*copy));
          g = std::move(copy);
        } catch (const UnsupportedOpError& e) {
          if (strict) throw;
          not_imported = e.what();
        }
      }
      try {
        inferShapesAndFold(*g, opts.fold_limit_bytes);
      } catch (const ShapeError& e) {
        throw ShapeError(e.what() + dynamicInputHint(*g));
      }
      requireStaticShapes(*g);
      checkOpsSupported(*g);
    } catch (const Error&) {
      if (!bytes) rethrowWithPrefix(text + ": ");  // as importOnnxFile names the file
      throw;
    }
  }
  Model out(std::shared_ptr<const Graph>(std::move(g)));
  out.qdq = std::move(imp);
  return py::make_tuple(std::move(out), not_imported);
}

Model importQdqModel(const Model& model) {
  std::shared_ptr<quant::QdqImport> imp;
  {
    py::gil_scoped_release release;
    imp = std::make_shared<quant::QdqImport>(quant::importQdq(model.graph()));
  }
  Model out(std::shared_ptr<const Graph>(std::move(imp->graph)));
  out.qdq = std::move(imp);
  return out;
}

py::dict qdqParams(const Model& model) {
  py::dict out;
  if (!model.qdq) return out;
  for (const auto& [name, t] : model.qdq->given) {
    py::dict d;
    d["scales"] = t.scales;
    d["zero_points"] = t.zero_points;
    d["axis"] = t.axis;
    d["dtype"] = quant::quantDTypeName(t.dtype);
    out[py::str(name)] = d;
  }
  return out;
}

// The INT8 simulator of `model` (the optimized graph of `source`, an import_qdq model) from the
// parameters `source` was given, `ranges` (calibrated, possibly empty) for what they lack.
py::tuple quantizeGiven(const Model& model, const Model& source, const std::string& method, bool strict,
                        const std::map<std::string, std::pair<float, float>>& ranges,
                        const std::vector<std::string>& hybrid_layers) {
  if (!source.qdq) throw ConfigError("quantize_given: the source model is not an imported QDQ model");
  std::map<std::string, quant::ClipRange> clip;
  for (const auto& [name, r] : ranges) clip[name] = quant::ClipRange{r.first, r.second};
  quant::QuantizerOptions opts;
  opts.granularity = quant::weightGranularityFromName(method);
  opts.hybrid_layers = std::set<std::string>(hybrid_layers.begin(), hybrid_layers.end());
  std::unique_ptr<Graph> graph = model.graph().clone();
  quant::GivenFit fit;
  quant::QuantPlan plan;
  {
    py::gil_scoped_release release;
    quant::separateSharedParameters(*graph);
    fit = quant::fitGivenParameters(*graph, source.graph(), source.qdq->given, source.qdq->integers, strict);
    opts.given = fit.given;
    // Nodes the file runs in FP16 (Cast(float16) pairs around them) stay FP16 where they survived
    // the optimizer; the rest of the classification is npuc's own, as in the build that exported them.
    for (const std::string& name : source.qdq->fp16_nodes) {
      const Node* n = graph->findNode(name);
      if (n && quant::classifyForInt8(*n) != quant::QuantOpKind::Float16) opts.hybrid_layers.insert(name);
    }
    try {
      plan = quant::buildQuantPlan(*graph, clip, opts);
    } catch (const ConfigError& e) {
      if (!clip.empty()) throw;
      throw ConfigError(std::string(e.what()) +
                        " (QDQ model: the file has no Q/DQ pair there and no shared-scale rule derives one; "
                        "build(do_quantization=True, dataset=...) calibrates what the file lacks)");
    }
    fit.inexact_biases += quant::givenBiasesNotUsed(plan, fit.given);
    for (const std::string& line : fit.notes) plan.warnings.push_back("QDQ import: " + line);
    for (const std::string& line : quant::givenNotKept(plan, fit.given))
      plan.warnings.push_back("QDQ import: " + line);
  }
  py::dict report;
  report["kept"] = fit.kept;
  report["rekeyed"] = fit.rekeyed;
  report["dropped_missing"] = fit.dropped_missing;
  report["dropped_changed"] = fit.dropped_changed;
  report["requantized"] = fit.requantized;
  report["inexact_biases"] = fit.inexact_biases;
  report["bias_integers_needed"] = fit.bias_integers_needed;
  report["notes"] = fit.notes;
  auto sim = std::make_shared<const QuantizedExecutor>(*graph, plan);
  return py::make_tuple(PyQuantizedModel(std::move(sim), std::move(plan)), report);
}

}  // namespace

void bindQdq(py::module_& m) {
  m.def(
      "is_qdq_model", [](const Model& model) { return quant::isQdqModel(model.graph()); }, py::arg("model"),
      "True when the model holds QuantizeLinear, DequantizeLinear, QLinearConv or QLinearMatMul nodes.");
  m.def(
      "load_onnx", &loadOnnx, py::arg("source"), py::arg("input_names") = std::vector<std::string>{},
      py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
      py::arg("output_names") = std::vector<std::string>{}, py::arg("custom_ops") = nullptr,
      py::arg("strict") = false,
      "(model, not_imported): Model.load (a path) or Model.from_bytes (bytes), recognizing a QDQ model: its "
      "Q/DQ "
      "nodes are stripped before constant folding, the given parameters kept with the model (qdq_params). A "
      "pattern npuc cannot map leaves the model as loaded (Q/DQ as ops) with the reason in not_imported, "
      "naming "
      "the node and the pattern; strict raises it (UnsupportedOpError).");
  m.def(
      "import_qdq", &importQdqModel, py::arg("model"),
      "The float model of a QDQ model, carrying the scales and zero points its Q/DQ nodes gave (qdq_params). "
      "Raises UnsupportedOpError naming the node and the pattern npuc cannot map.");
  m.def("qdq_params", &qdqParams, py::arg("model"),
        "Value name -> {'scales', 'zero_points', 'axis', 'dtype'} of an import_qdq model (zero points in the "
        "int8 domain: uint8 ones minus 128); empty for other models.");
  m.def(
      "qdq_counts",
      [](const Model& model) {
        py::dict d;
        if (!model.qdq) return d;
        d["activations"] = model.qdq->activations;
        d["constants"] = model.qdq->constants;
        d["uint8_shifted"] = model.qdq->uint8_shifted;
        return d;
      },
      py::arg("model"), "{'activations', 'constants', 'uint8_shifted'} of an import_qdq model.");
  m.def("quantize_given", &quantizeGiven, py::arg("model"), py::arg("source"), py::arg("method") = "channel",
        py::arg("strict") = false, py::arg("ranges") = std::map<std::string, std::pair<float, float>>{},
        py::arg("hybrid_layers") = std::vector<std::string>{},
        "(QuantizedModel, report): the INT8 simulator of `model` (source's optimized graph) with the "
        "parameters "
        "the QDQ file gave; `ranges` calibrate what it lacks. strict refuses weights that cannot be kept "
        "exactly.");
}

}  // namespace npuc::bindings
