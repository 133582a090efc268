// Quantization for Python: a streaming Calibrator over a Model, the QuantPlan it produces, and
// the bit-exact simulator (INT8 or FP16) as QuantizedModel. The GIL is released while samples
// and inferences run.
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <set>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "bindings/quantized_model.h"
#include "bindings/run_limits.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/qdq_export.h"
#include "quant/graph/quant_plan_codec.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/accuracy_analysis.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::bindings {

namespace {

using quant::QuantizedExecutor;

// A host tensor copied from a numpy array, converted to the graph input's dtype.
Tensor tensorFromArray(const py::handle& obj, const Value& expected) {
  py::array arr = py::array::ensure(obj);
  if (!arr) throw InputError("input '" + expected.name() + "' must be a numpy array (or convertible to one)");
  arr = py::array::ensure(arr.attr("astype")(toNumpyDType(expected.dtype())), py::array::c_style);
  Tensor t(expected.dtype(), Shape(arr.shape(), arr.shape() + arr.ndim()));
  if (t.nbytes()) std::memcpy(t.raw(), arr.data(), t.nbytes());
  return t;
}

std::vector<Tensor> tensorsFromList(const py::sequence& inputs, const Graph& g) {
  if (inputs.size() != g.inputs().size()) {
    throw InputError("the model has " + std::to_string(g.inputs().size()) + " input(s), got " +
                     std::to_string(inputs.size()));
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) out.push_back(tensorFromArray(inputs[i], *g.inputs()[i]));
  return out;
}

std::unique_ptr<Graph> separated(const Graph& g) {
  std::unique_ptr<Graph> copy = g.clone();
  quant::separateSharedParameters(*copy);
  return copy;
}

// QuantizerOptions from RKNN's quantized_dtype and quantized_method: "channel" / "layer" set the
// weight granularity, "group32" .. "group256" the w4a16 weight groups (QuantScheme::of refuses a
// group method without w4a16 and w4a16 without one, naming both).
quant::QuantizerOptions quantizerOptions(const std::string& dtype, const std::string& method,
                                         const std::vector<std::string>& hybrid_layers) {
  const std::optional<quant::SchemeDType> d = quant::schemeDTypeFromName(dtype);
  if (!d)
    throw ConfigError("unknown quantized_dtype '" + dtype + "' (w8a8, w8a16, w16a16i, w16a16i_dfp, w4a16)");
  quant::QuantizerOptions opts;
  int64_t group = 0;
  if (method.rfind("group", 0) == 0) {
    const std::string n = method.substr(5);
    group = n == "32" ? 32 : n == "64" ? 64 : n == "128" ? 128 : n == "256" ? 256 : -1;
    if (group < 0)
      throw ConfigError("unknown quantized_method '" + method + "' (group32, group64, group128, group256)");
  } else {
    opts.granularity = quant::weightGranularityFromName(method);
  }
  opts.scheme = quant::QuantScheme::of(*d, group);
  opts.hybrid_layers = std::set<std::string>(hybrid_layers.begin(), hybrid_layers.end());
  return opts;
}

int checkedThreads(int threads) {
  if (threads < 0)
    throw ConfigError("Calibrator: threads must be >= 0 (0: one per core), got " + std::to_string(threads));
  return threads;
}

// Wall seconds since `start` (the calibrator's stage timings).
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class PyCalibrator {
 public:
  // The clone is quantized: its weights and biases get constants of their own (the FP32 values the
  // calibrator computes are the same).
  PyCalibrator(const Model& model, int threads)
      : graph_(separated(model.graph())), calibrator_(*graph_, checkedThreads(threads)) {}
  void addSample(const py::sequence& inputs) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Tensor> tensors = tensorsFromList(inputs, *graph_);
    input_s_ += secondsSince(start);
    py::gil_scoped_release release;
    calibrator_.addSample(tensors);
  }
  void addSamples(const py::sequence& samples) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<Tensor>> batch;
    for (const py::handle& sample : samples)
      batch.push_back(tensorsFromList(py::reinterpret_borrow<py::sequence>(sample), *graph_));
    input_s_ += secondsSince(start);
    py::gil_scoped_release release;
    calibrator_.addSamples(batch);
  }
  int threads() const { return calibrator_.threads(); }
  int64_t numSamples() const { return calibrator_.numSamples(); }
  std::map<std::string, std::pair<float, float>> ranges(const std::string& algorithm) const {
    quant::CalibrationOptions opts;
    opts.algorithm = quant::calibrationAlgorithmFromName(algorithm);
    std::map<std::string, std::pair<float, float>> out;
    for (const auto& [name, r] : calibrator_.ranges(opts)) out[name] = {r.min, r.max};
    return out;
  }
  PyQuantizedModel quantize(const std::string& algorithm, const std::string& method,
                            const std::vector<std::string>& hybrid_layers, bool reference,
                            const std::string& dtype) {
    quant::CalibrationOptions calib;
    calib.algorithm = quant::calibrationAlgorithmFromName(algorithm);
    const quant::QuantizerOptions opts = quantizerOptions(dtype, method, hybrid_layers);
    py::gil_scoped_release release;
    auto start = std::chrono::steady_clock::now();
    const std::map<std::string, quant::ClipRange> ranges = calibrator_.ranges(calib);
    search_s_ = secondsSince(start);
    start = std::chrono::steady_clock::now();
    quant::QuantPlan plan = quant::buildQuantPlan(*graph_, ranges, opts);
    plan_s_ = secondsSince(start);
    start = std::chrono::steady_clock::now();
    quant::SimOptions sim_opts;
    sim_opts.path = reference ? quant::SimPath::Reference : quant::SimPath::Fast;
    auto sim = std::make_shared<const QuantizedExecutor>(*graph_, plan, sim_opts);
    simulator_s_ = secondsSince(start);
    return PyQuantizedModel(std::move(sim), std::move(plan));
  }
  // Seconds per stage: inputs (numpy -> tensors), forward, statistics (summed over samples), and
  // of the last quantize(): search (range per activation), plan (weights, biases, parameters),
  // simulator (integer kernels prepared).
  std::map<std::string, double> timings() const {
    const quant::CalibrationTimings& t = calibrator_.timings();
    return {{"inputs", input_s_},           {"collect", t.collect_s}, {"forward", t.forward_s},
            {"statistics", t.statistics_s}, {"search", search_s_},    {"plan", plan_s_},
            {"simulator", simulator_s_}};
  }

 private:
  std::unique_ptr<Graph> graph_;
  quant::Calibrator calibrator_;
  double input_s_ = 0.0, search_s_ = 0.0, plan_s_ = 0.0, simulator_s_ = 0.0;
};

py::list runQuantized(const PyQuantizedModel& qm, const py::sequence& inputs,
                      const py::object& max_run_bytes) {
  const RunMemoryLimits limits = runMemoryLimits(max_run_bytes);
  std::vector<Tensor> tensors = tensorsFromList(inputs, qm.sim().graph());
  std::vector<Tensor> outs;
  {
    py::gil_scoped_release release;
    outs = qm.run(tensors, limits);
  }
  py::list result;
  for (Tensor& t : outs) {
    result.append(tensorToNumpy(t));
    t = Tensor();  // one output held twice at a time, not all of them
  }
  return result;
}

py::list accuracyRows(const std::vector<quant::LayerAccuracy>& rows) {
  py::list out;
  for (const quant::LayerAccuracy& r : rows) {
    py::dict d;
    d["value"] = r.value;
    d["node"] = r.node;
    d["op_type"] = r.op_type;
    d["precision"] = r.precision;
    d["cosine"] = r.metrics.cosine;
    d["euclidean"] = r.metrics.euclidean;
    d["sqnr_db"] = r.metrics.sqnr_db;
    d["max_abs_error"] = r.metrics.max_abs_error;
    d["single_cosine"] = r.single.cosine;
    d["single_euclidean"] = r.single.euclidean;
    d["single_sqnr_db"] = r.single.sqnr_db;
    d["single_max_abs_error"] = r.single.max_abs_error;
    out.append(d);
  }
  return out;
}

py::dict tensorDict(const std::map<std::string, Tensor>& tensors) {
  py::dict d;
  for (const auto& [name, t] : tensors) d[py::str(name)] = tensorToNumpy(t);
  return d;
}

py::list accuracyAnalysis(const PyQuantizedModel& qm, const py::sequence& inputs) {
  std::vector<Tensor> tensors = tensorsFromList(inputs, qm.sim().graph());
  std::vector<quant::LayerAccuracy> rows;
  {
    py::gil_scoped_release release;
    rows = quant::analyzeAccuracy(qm.sim(), qm.plan(), tensors);
  }
  return accuracyRows(rows);
}

// The rows plus every tensor they compare (for the per-tensor dumps of Toolkit.accuracy_analysis).
py::dict accuracyReport(const PyQuantizedModel& qm, const py::sequence& inputs, const py::object& progress) {
  std::vector<Tensor> tensors = tensorsFromList(inputs, qm.sim().graph());
  std::vector<quant::LayerAccuracy> rows;
  quant::AccuracyTensors compared;
  quant::AccuracyProgress report;
  if (!progress.is_none()) {
    report = [&progress](size_t done, size_t total) {
      py::gil_scoped_acquire gil;  // the analysis runs with the GIL released
      progress(done, total);
    };
  }
  {
    py::gil_scoped_release release;
    rows = quant::analyzeAccuracy(qm.sim(), qm.plan(), tensors, &compared, report);
  }
  py::dict out;
  out["rows"] = accuracyRows(rows);
  out["fp32"] = tensorDict(compared.fp32);
  out["simulated"] = tensorDict(compared.simulated);
  out["single"] = tensorDict(compared.single);
  return out;
}

// The INT8 simulator of `model` from given activation ranges (hybrid_quantization_step2: the
// ranges come from the edited quantization config instead of a calibration run).
PyQuantizedModel quantizeFromRanges(const Model& model,
                                    const std::map<std::string, std::pair<float, float>>& ranges,
                                    const std::string& method, const std::vector<std::string>& hybrid_layers,
                                    const std::string& dtype) {
  std::map<std::string, quant::ClipRange> clip;
  for (const auto& [name, r] : ranges) clip[name] = quant::ClipRange{r.first, r.second};
  const quant::QuantizerOptions opts = quantizerOptions(dtype, method, hybrid_layers);
  py::gil_scoped_release release;
  std::unique_ptr<Graph> graph = separated(model.graph());
  quant::QuantPlan plan = quant::buildQuantPlan(*graph, clip, opts);
  auto sim = std::make_shared<const QuantizedExecutor>(*graph, plan);
  return PyQuantizedModel(std::move(sim), std::move(plan));
}

// The simulator of `model` with a plan given as a QUNT payload (docs/blob_format.md, codec 1-3): the
// consumers of a plan (run, export_onnx) on a plan npuc did not calibrate, e.g. a hand-made one of
// another quantized dtype. BlobError naming the field when the payload is malformed; ConfigError
// when it does not fit the graph.
PyQuantizedModel quantizedFromPlan(const Model& model, const py::bytes& plan_bytes) {
  const std::string bytes = plan_bytes;
  py::gil_scoped_release release;
  quant::QuantPlan plan = quant::decodeQuantPlan(bytes);
  std::unique_ptr<Graph> graph = separated(model.graph());
  auto sim = std::make_shared<const QuantizedExecutor>(*graph, plan);
  return PyQuantizedModel(std::move(sim), std::move(plan));
}

// Writes the quantized model's graph with its plan as a required QUNT section: a reader that
// cannot apply the plan must refuse the blob rather than run the float graph.
// The model as ONNX that ONNX Runtime runs like the simulator: QDQ for an INT8 model, float
// ONNX with half-rounding Casts around every node for the FP16 model (quant/graph/qdq_export.h).
void exportQuantizedOnnx(const PyQuantizedModel& qm, const std::string& path) {
  quant::QdqExportOptions opts;
  opts.float16_model = qm.sim().mode() == quant::SimMode::Float16;
  py::gil_scoped_release release;
  quant::exportQdqOnnxFile(qm.sim().graph(), qm.plan(), path, opts);
}

}  // namespace

void bindQuant(py::module_& m) {
  py::class_<PyQuantizedModel>(m, "QuantizedModel",
                               "A model on the bit-exact INT8 (or FP16) simulator (thread-safe run()).")
      .def("run", &runQuantized, py::arg("inputs"), py::arg("max_run_bytes") = py::none(),
           "Runs the simulator on a list of numpy arrays (one per input); returns float32 outputs. Refused "
           "with ResourceError, before the run allocates, when its estimated memory exceeds max_run_bytes "
           "(as Runtime.run: an int or '8G'; None: NPUC_MAX_RUN_BYTES, else no cap) or the memory available.")
      .def_property_readonly(
          "runtime", [](const PyQuantizedModel& q) { return q.program() ? "program" : "simulator"; },
          "'program': a loaded blob's tasks run in program order over the planned activation arena; "
          "'simulator': the graph node by node (after build(), or a blob without program/memory plan).")
      .def_property_readonly("runtime_note", &PyQuantizedModel::programNote,
                             "Why run() does not use the program runtime ('' when it does).")
      .def_property_readonly(
          "arena_bytes",
          [](const PyQuantizedModel& q) { return q.program() ? q.program()->arenaBytes() : 0; },
          "Size of the program runtime's activation arena (0 on the simulator).")
      .def_property_readonly(
          "arena_allocations",
          [](const PyQuantizedModel& q) { return q.program() ? q.program()->arenasAllocated() : 0; },
          "Arenas the program runtime allocated so far: one per run in flight at once, reused after.")
      .def(
          "describe_program",
          [](const PyQuantizedModel& q) { return q.program() ? q.program()->describe() : std::string(); },
          "One line per task in execution order ('' on the simulator).")
      .def_property_readonly(
          "plan_bytes", [](const PyQuantizedModel& q) { return py::bytes(quant::encodeQuantPlan(q.plan())); },
          "The quantization plan as a QUNT payload (docs/blob_format.md; quantized_from_plan reads it).")
      .def_property_readonly(
          "mode",
          [](const PyQuantizedModel& q) { return q.sim().mode() == quant::SimMode::Int8 ? "int8" : "fp16"; })
      .def_property_readonly(
          "inputs", [](const PyQuantizedModel& q) { return valueInfoList(q.sim().graph().inputs()); })
      .def_property_readonly(
          "outputs", [](const PyQuantizedModel& q) { return valueInfoList(q.sim().graph().outputs()); })
      .def_property_readonly("warnings", [](const PyQuantizedModel& q) { return q.plan().warnings; })
      .def_property_readonly(
          "weight_outlier_table",
          [](const PyQuantizedModel& q) { return quant::formatOutlierTable(q.plan().weight_outliers); })
      .def_property_readonly(
          "node_precisions",
          [](const PyQuantizedModel& q) {
            std::map<std::string, std::string> out;
            for (const auto& [name, p] : q.plan().nodes) out[name] = quant::nodePrecisionName(p);
            return out;
          },
          "Node name -> 'int8' or 'fp16'.")
      .def_property_readonly(
          "activation_params",
          [](const PyQuantizedModel& q) {
            std::map<std::string, std::pair<float, int32_t>> out;
            for (const auto& [name, t] : q.plan().tensors)
              if (t.isPerTensor() && t.dtype == quant::QuantDType::Int8)
                out[name] = {t.scales[0], t.zero_points[0]};
            return out;
          },
          "Value name -> (scale, zero_point) of every per-tensor int8 value.")
      .def_property_readonly(
          "tensor_scales",
          [](const PyQuantizedModel& q) {
            std::map<std::string, std::pair<int64_t, std::vector<float>>> out;
            for (const auto& [name, t] : q.plan().tensors) out[name] = {t.axis, t.scales};
            return out;
          },
          "Value name -> (axis, scales) of every quantized tensor, weights included (axis -1: per tensor).")
      .def("export_onnx", &exportQuantizedOnnx, py::arg("path"),
           "Writes the model as standard ONNX QDQ (QuantizeLinear/DequantizeLinear around every int8 tensor, "
           "int8 weights, int32 biases; FP16 nodes between Cast(float16) pairs) that ONNX Runtime can run.")
      .def("accuracy_analysis", &accuracyAnalysis, py::arg("inputs"),
           "Per activation, in graph order: {'value', 'node', 'op_type', 'precision', 'cosine', 'euclidean', "
           "'sqnr_db', 'max_abs_error'} of the simulator vs the FP32 model on these inputs (the end-to-end "
           "run), and the same four as 'single_*' for the layer run alone on its quantized FP32 inputs.")
      .def("accuracy_report", &accuracyReport, py::arg("inputs"), py::arg("progress") = py::none(),
           "{'rows': accuracy_analysis rows, 'fp32', 'simulated', 'single': {value name: array}}: the "
           "rows and every tensor they compare. progress(done, total), if given, is called as the "
           "analysis advances (units of one simulator step; the FP32, end-to-end and per-layer runs "
           "each count one per node).")
      .def(
          "describe", [](const PyQuantizedModel& q) { return q.sim().describe(); },
          "One line per node: the kernel it runs on (int8 ... or fp16).");

  py::class_<PyCalibrator>(
      m, "Calibrator", "Streams calibration samples through the FP32 model into per-activation histograms.")
      .def(py::init<const Model&, int>(), py::arg("model"), py::arg("threads") = 0,
           "threads: samples add_samples runs at once, and range-search threads (0: one per core); "
           "the results are the same bits for any value.")
      .def("add_sample", &PyCalibrator::addSample, py::arg("inputs"),
           "Runs one sample (a list of arrays, one per model input) and records its activations.")
      .def("add_samples", &PyCalibrator::addSamples, py::arg("samples"),
           "add_sample on each sample (a list of such lists) in order, up to `threads` of them at once.")
      .def_property_readonly("threads", &PyCalibrator::threads)
      .def_property_readonly("num_samples", &PyCalibrator::numSamples)
      .def_property_readonly("timings", &PyCalibrator::timings,
                             "Seconds per calibration stage: 'inputs', 'collect' (wall), 'forward' and "
                             "'statistics' (summed over samples and worker threads), and 'search', 'plan', "
                             "'simulator' (of the last quantize()).")
      .def("ranges", &PyCalibrator::ranges, py::arg("algorithm") = "normal",
           "Calibrated (min, max) per activation name.")
      .def("quantize", &PyCalibrator::quantize, py::arg("algorithm") = "normal",
           py::arg("method") = "channel", py::arg("hybrid_layers") = std::vector<std::string>{},
           py::arg("reference") = false, py::arg("dtype") = "w8a8",
           "Builds the quantization plan and the integer simulator (reference=True: plain reference loops); "
           "dtype is RKNN's quantized_dtype, method 'channel', 'layer' or 'group32'..'group256' (w4a16).");

  m.def("quantized_from_plan", &quantizedFromPlan, py::arg("model"), py::arg("plan"),
        "The simulator of `model` with the given plan (a QUNT payload, as QuantizedModel.plan_bytes).");
  m.def("quantize_from_ranges", &quantizeFromRanges, py::arg("model"), py::arg("ranges"),
        py::arg("method") = "channel", py::arg("hybrid_layers") = std::vector<std::string>{},
        py::arg("dtype") = "w8a8",
        "The INT8 simulator of `model` from given (min, max) ranges per activation (no calibration run).");
  m.def(
      "fp16_model",
      [](const Model& model) {
        auto sim = std::make_shared<const QuantizedExecutor>(model.graph());
        return PyQuantizedModel(std::move(sim), quant::QuantPlan{});
      },
      py::arg("model"),
      "The model on the FP16 simulator (weights and every op output rounded to IEEE half).");
}

}  // namespace npuc::bindings
