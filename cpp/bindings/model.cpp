// Model: an imported ONNX (or Caffe) graph with the information `npuc info` shows, and ONNX export.
#include "bindings/model.h"

#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "frontend/darknet/darknet_import.h"
#include "frontend/caffe/caffe_import.h"
#include "frontend/tflite/tflite_import.h"
#include "frontend/tflite/tflite_ranges.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "opset/custom_ops.h"
#include "opset/registry.h"

namespace npuc::bindings {

namespace {

ImportOptions makeImportOptions(const std::vector<std::string>& input_names,
                                const std::vector<std::vector<int64_t>>& input_sizes,
                                const std::vector<std::string>& output_names,
                                std::shared_ptr<CustomOpSet> custom_ops) {
  ImportOptions opts;
  opts.custom_ops = std::move(custom_ops);
  opts.input_names = input_names;
  opts.input_sizes.assign(input_sizes.begin(), input_sizes.end());
  opts.output_names = output_names;
  return opts;
}

}  // namespace

Model Model::fromFile(const std::string& path, const ImportOptions& opts) {
  std::unique_ptr<Graph> g;
  {
    py::gil_scoped_release release;
    g = importOnnxFile(path, opts);
  }
  return Model(std::shared_ptr<const Graph>(std::move(g)));
}

Model Model::fromBytes(const std::string& bytes, const ImportOptions& opts) {
  std::unique_ptr<Graph> g;
  {
    py::gil_scoped_release release;
    g = importOnnxBytes(bytes, opts);
  }
  return Model(std::shared_ptr<const Graph>(std::move(g)));
}

void bindModel(py::module_& m) {
  py::class_<Model>(m, "Model", "An ONNX model imported into the npuc IR (static shapes, folded constants).")
      .def_static(
          "load",
          [](const std::string& path, const std::vector<std::string>& input_names,
             const std::vector<std::vector<int64_t>>& input_sizes, const std::vector<std::string>& output_names,
             std::shared_ptr<CustomOpSet> custom_ops) {
            return Model::fromFile(path, makeImportOptions(input_names, input_sizes, output_names, custom_ops));
          },
          py::arg("path"), py::arg("input_names") = std::vector<std::string>{},
          py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
          py::arg("output_names") = std::vector<std::string>{}, py::arg("custom_ops") = nullptr,
          "Imports an ONNX file. input_sizes fixes dynamic dims (one full shape per input, in the order of "
          "input_names or of the graph inputs); output_names cuts the graph at those tensors; custom_ops "
          "(a CustomOpSet) defines the user's ops the model uses.")
      .def_static(
          "from_bytes",
          [](const py::bytes& data, const std::vector<std::string>& input_names,
             const std::vector<std::vector<int64_t>>& input_sizes, const std::vector<std::string>& output_names,
             std::shared_ptr<CustomOpSet> custom_ops) {
            return Model::fromBytes(std::string(data),
                                    makeImportOptions(input_names, input_sizes, output_names, custom_ops));
          },
          py::arg("data"), py::arg("input_names") = std::vector<std::string>{},
          py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
          py::arg("output_names") = std::vector<std::string>{}, py::arg("custom_ops") = nullptr,
          "Imports a serialized ONNX ModelProto (custom_ops as for load).")
      .def_static(
          "load_darknet",
          [](const std::string& cfg, const std::string& weights, const std::vector<std::vector<int64_t>>& input_sizes,
             const std::vector<std::string>& output_names) {
            ImportOptions opts = makeImportOptions({}, input_sizes, output_names, nullptr);
            std::unique_ptr<Graph> g;
            {
              py::gil_scoped_release release;
              g = importDarknetFiles(cfg, weights, opts);
            }
            return Model(std::shared_ptr<const Graph>(std::move(g)));
          },
          py::arg("cfg"), py::arg("weights"), py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
          py::arg("output_names") = std::vector<std::string>{},
          "Imports a Darknet network (.cfg + .weights, docs/frontend_darknet.md): input 'data' [1,C,H,W] "
          "(RGB scaled to 0..1), the raw [yolo]/[region] head tensors and the last layer as outputs.")
      .def_static(
          "load_caffe",
          [](const std::string& prototxt, const std::string& caffemodel, const std::string& input_name,
             const std::vector<std::string>& input_names, const std::vector<std::vector<int64_t>>& input_sizes,
             const std::vector<std::string>& output_names, std::shared_ptr<CustomOpSet> custom_ops) {
            CaffeImportOptions opts;
            opts.base = makeImportOptions(input_names, input_sizes, output_names, std::move(custom_ops));
            opts.input_name = input_name;
            std::unique_ptr<Graph> g;
            {
              py::gil_scoped_release release;
              g = importCaffeFiles(prototxt, caffemodel, opts);
            }
            return Model(std::shared_ptr<const Graph>(std::move(g)));
          },
          py::arg("prototxt"), py::arg("caffemodel") = "", py::arg("input_name") = "",
          py::arg("input_names") = std::vector<std::string>{}, py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
          py::arg("output_names") = std::vector<std::string>{}, py::arg("custom_ops") = nullptr,
          "Imports a Caffe net: the deploy prototxt and its caffemodel (\"\" = none; only nets without "
          "trained layers load then). input_name, when given, must name one of the net's inputs; input_names, "
          "input_sizes, output_names and custom_ops as for load.")
      .def_static(
          "load_tflite",
          [](const std::string& path, bool input_is_nchw, const std::vector<std::string>& input_names,
             const std::vector<std::vector<int64_t>>& input_sizes, const std::vector<std::string>& output_names) {
            TfliteImportOptions opts;
            opts.base = makeImportOptions(input_names, input_sizes, output_names, nullptr);
            opts.input_is_nchw = input_is_nchw;
            TfliteImport imp;
            {
              py::gil_scoped_release release;
              imp = importTfliteFile(path, opts);
            }
            Model m(std::shared_ptr<const Graph>(std::move(imp.graph)));
            m.imported_ranges = std::move(imp.ranges);
            m.imported_weight_scales = std::move(imp.weight_scales);
            return m;
          },
          py::arg("path"), py::arg("input_is_nchw") = false, py::arg("input_names") = std::vector<std::string>{},
          py::arg("input_sizes") = std::vector<std::vector<int64_t>>{},
          py::arg("output_names") = std::vector<std::string>{},
          "Imports a TFLite model (docs/frontend_tflite.md): NCHW inside; a 4-D NHWC input becomes an NCHW graph "
          "input of the same name (input_is_nchw=True keeps the file's dims), 4-D outputs stay NHWC. A quantized "
          "file's activation ranges are kept in imported_ranges.")
      .def_property_readonly(
          "imported_ranges",
          [](const Model& mo) {
            py::dict out;
            for (const auto& [name, r] : mo.imported_ranges) {
              py::dict d;
              d["min"] = r.min;
              d["max"] = r.max;
              d["scale"] = r.scale;
              d["zero_point"] = r.zero_point;
              d["dtype"] = r.dtype;
              out[py::str(name)] = d;
            }
            return out;
          },
          "Value name -> {'min', 'max', 'scale', 'zero_point', 'dtype'}: the activation ranges a quantized TFLite "
          "file declares (min = (qmin - zp) * scale, max = (qmax - zp) * scale); empty for other models.")
      .def(
          "complete_ranges",
          [](const Model& mo, std::map<std::string, std::pair<float, float>> ranges) {
            std::vector<std::string> filled = tflite::completeRanges(mo.graph(), ranges);
            return py::make_tuple(ranges, filled);
          },
          py::arg("ranges"),
          "(ranges, filled): `ranges` ({value name: (min, max)}) completed for this model's float activations "
          "that lack one, each taking the nearest upstream range (frontend/tflite/tflite_ranges.h), and the "
          "names filled.")
      .def_property_readonly(
          "imported_weight_scales",
          [](const Model& mo) {
            py::dict out;
            for (const auto& [name, w] : mo.imported_weight_scales) {
              py::dict d;
              d["scales"] = w.scales;
              d["axis"] = w.axis;
              out[py::str(name)] = d;
            }
            return out;
          },
          "Weight constant name -> {'scales', 'axis'}: how a quantized TFLite file quantized it (axis in npuc's "
          "layout, -1 per tensor).")
      .def_property_readonly(
          "inputs", [](const Model& mo) { return valueInfoList(mo.graph().inputs()); },
          "Graph inputs: list of {'name', 'dtype', 'shape'} dicts.")
      .def_property_readonly(
          "outputs", [](const Model& mo) { return valueInfoList(mo.graph().outputs()); },
          "Graph outputs: list of {'name', 'dtype', 'shape'} dicts.")
      .def_property_readonly(
          "nodes",
          [](const Model& mo) {
            py::list out;
            for (const Node* n : mo.graph().nodes()) {
              py::dict d;
              d["name"] = n->name();
              d["op_type"] = n->opType();
              out.append(d);
            }
            return out;
          },
          "Nodes in graph order: list of {'name', 'op_type'} dicts.")
      .def_property_readonly(
          "unknown_ops",
          [](const Model& mo) {
            py::list out;
            for (const Node* n : mo.graph().nodes()) {
              if (OpRegistry::instance().find(*n)) continue;
              py::dict d;
              d["name"] = n->name();
              d["op_type"] = n->opType();
              d["domain"] = n->domain();
              out.append(d);
            }
            return out;
          },
          "Nodes whose op neither npuc nor the model's custom ops define (a blob's custom ops loaded "
          "without their registration): list of {'name', 'op_type', 'domain'} dicts.")
      .def_property_readonly(
          "num_nodes", [](const Model& mo) { return mo.graph().numNodes(); }, "Number of nodes.")
      .def_property_readonly(
          "op_histogram", [](const Model& mo) { return mo.stats().op_histogram; }, "Op type -> node count.")
      .def_property_readonly(
          "macs", [](const Model& mo) { return mo.stats().macs; },
          "Multiply-accumulates of Conv/ConvTranspose/Gemm/MatMul.")
      .def_property_readonly(
          "params", [](const Model& mo) { return mo.stats().params; },
          "Elements of all floating-point constants.")
      .def_property_readonly(
          "param_bytes", [](const Model& mo) { return mo.stats().param_bytes; },
          "Bytes of all floating-point constants.")
      .def(
          "dump", [](const Model& mo) { return mo.graph().dump(); }, "The graph as text, one node per line.")
      .def(
          "export_onnx", [](const Model& mo, const std::string& path) { exportOnnxFile(mo.graph(), path); },
          py::arg("path"), "Writes the model as ONNX.")
      .def(
          "to_onnx_bytes", [](const Model& mo) { return py::bytes(exportOnnxBytes(mo.graph())); },
          "The model as serialized ONNX bytes.")
      .def("__repr__", [](const Model& mo) {
        return "<npuc.Model '" + mo.graph().name + "' with " + std::to_string(mo.graph().numNodes()) +
               " nodes>";
      });
}

}  // namespace npuc::bindings
