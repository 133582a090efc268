// Runtime: the planned FP32 executor over numpy arrays. Inputs that are already C-contiguous
// arrays of the model's dtype are read in place; outputs are fresh numpy arrays the executor
// writes directly. The GIL is released while the graph runs, so Python threads can run one
// Runtime concurrently.
#include <pybind11/stl.h>

#include <optional>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "bindings/run_limits.h"
#include "opset/bounded_output.h"
#include "runtime/executor.h"
#include "runtime/host_fusion.h"

namespace npuc::bindings {

namespace {

// Python-facing wrapper; the Executor is immutable after construction and thread-safe.
class Runtime {
 public:
  Runtime(const Model& model, std::optional<bool> host_fusion, bool channels_last) {
    ExecutorOptions opts;
    opts.host_fusion = host_fusion ? *host_fusion : hostFusionEnabledByEnv();
    opts.channels_last = channels_last;
    executor_ = std::make_unique<Executor>(model.graph(), opts);
    bounded_axes_ = boundedAxesOfOutputs(executor_->compiledGraph());
  }
  const Executor& executor() const { return *executor_; }
  // Per output: the axis of a bounded (data-dependent size) output, else -1 (opset/bounded_output.h).
  const std::vector<int>& boundedAxes() const { return bounded_axes_; }

 private:
  std::unique_ptr<Executor> executor_;
  std::vector<int> bounded_axes_;
};

// Brings `obj` to an array the executor can read: the array itself when it is C-contiguous and
// of a type npuc knows, else a C-contiguous copy. A dtype other than the model's is not converted:
// the executor then reports the mismatch by input name.
py::array asInputArray(const py::handle& obj) {
  py::array arr = py::array::ensure(obj);
  if (!arr) throw InputError("inputs must be numpy arrays (or convertible to one)");
  if (!arr.dtype().attr("isnative").cast<bool>()) {
    // A non-native byte order (e.g. '>f4' read from a file): the same type in native order.
    arr = py::array::ensure(arr.attr("astype")(arr.dtype().attr("newbyteorder")("=")));
  }
  if (!(arr.flags() & py::array::c_style)) {
    arr = py::array::ensure(arr, py::array::c_style | py::array::forcecast);
  }
  return arr;
}

// The executor never writes inputs, so read-only arrays are fine.
TensorView viewOf(const py::array& arr, const IoInfo* expected) {
  const DType dt = fromNumpyDType(arr.dtype());
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  if (dt == DType::Undefined) {
    const std::string got = py::str(arr.dtype()).cast<std::string>() + shapeStr(shape);
    if (!expected) throw InputError("an input of numpy type " + got + " cannot be read by npuc");
    throw InputError("input '" + expected->name + "' expects " + dtypeName(expected->dtype) +
                     shapeStr(expected->shape) + ", got " + got);
  }
  return TensorView(const_cast<void*>(arr.data()), dt, std::move(shape));
}

// A fresh numpy array for output `o`. numpy's MemoryError (the memory went between the check and
// the allocation) becomes ResourceError naming the output.
py::array allocateOutput(const IoInfo& o) {
  try {
    return py::array(toNumpyDType(o.dtype), o.shape);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_MemoryError)) throw;
    throw ResourceError("cannot allocate output '" + o.name + "' " + dtypeName(o.dtype) + shapeStr(o.shape) +
                        " (" + std::to_string(tensorBufferBytes(o.dtype, o.shape)) + " bytes)");
  }
}

// The caller side of one run: inputs as arrays the executor reads in place (kept alive here),
// fresh output arrays, and the views of both.
struct RunBuffers {
  std::vector<py::array> keep;  // holds the (possibly copied) inputs alive during the run
  std::vector<TensorView> in_views, out_views;
  py::list result;

  RunBuffers(const Executor& ex, const py::sequence& inputs) {
    keep.reserve(inputs.size());
    for (const py::handle& obj : inputs) keep.push_back(asInputArray(obj));
    in_views.reserve(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      in_views.push_back(viewOf(keep[i], i < ex.inputs().size() ? &ex.inputs()[i] : nullptr));
    }
    for (const IoInfo& o : ex.outputs()) {
      py::array arr = allocateOutput(o);
      out_views.emplace_back(arr.mutable_data(), o.dtype, o.shape);
      result.append(arr);
    }
  }
};

py::list runRuntime(const Runtime& rt, const py::sequence& inputs, const py::object& max_run_bytes) {
  const Executor& ex = rt.executor();
  // Before anything is allocated: the outputs below and the arena of a first run.
  ex.checkRunMemory(runMemoryLimits(max_run_bytes));
  RunBuffers buf(ex, inputs);
  {
    py::gil_scoped_release release;
    ex.run(buf.in_views, buf.out_views);
  }
  py::list result = buf.result;
  const std::vector<TensorView>& out_views = buf.out_views;
  // A bounded output (NonMaxSuppression / NonZero on computed data) is handed back as the view of
  // its actual extent; the -1 padding past it is not shown.
  for (size_t i = 0; i < rt.boundedAxes().size(); ++i) {
    const int axis = rt.boundedAxes()[i];
    if (axis < 0) continue;
    const int64_t k = boundedExtent(out_views[i], axis);
    py::tuple index(2);
    const Shape& s = out_views[i].shape;
    index[0] = py::slice(0, static_cast<py::ssize_t>(axis == 0 ? k : s[0]), 1);
    index[1] = py::slice(0, static_cast<py::ssize_t>(axis == 1 ? k : s[1]), 1);
    result[i] = result[i].attr("__getitem__")(index).attr("copy")();
  }
  return result;
}

// Per compiled node (in run order): (node name, op type, mean ms over `runs` runs).
py::list profileRuntime(const Runtime& rt, const py::sequence& inputs, int runs) {
  const Executor& ex = rt.executor();
  ex.checkRunMemory(RunMemoryLimits{});
  RunBuffers buf(ex, inputs);
  std::vector<NodeTiming> rows;
  {
    py::gil_scoped_release release;
    rows = ex.profile(buf.in_views, buf.out_views, runs);
  }
  py::list out;
  for (const NodeTiming& r : rows) out.append(py::make_tuple(r.node, r.op_type, r.ms));
  return out;
}

py::list ioInfoList(const std::vector<IoInfo>& infos) {
  py::list out;
  for (const IoInfo& info : infos) {
    py::dict d;
    d["name"] = info.name;
    d["dtype"] = dtypeName(info.dtype);
    d["shape"] = py::tuple(py::cast(info.shape));
    out.append(d);
  }
  return out;
}

py::dict memoryStatsDict(const Executor& ex) {
  const MemoryPlanStats& s = ex.memoryStats();
  py::dict d;
  d["arena_bytes"] = s.arena_bytes;
  d["lower_bound_bytes"] = s.lower_bound_bytes;
  d["workspace_bytes"] = s.workspace_bytes;
  d["constant_bytes"] = s.constant_bytes;
  d["aliased_nodes"] = ex.numAliasedSteps();
  return d;
}

}  // namespace

void bindRuntime(py::module_& m) {
  m.def(
      "max_run_bytes", [](const py::object& value) { return runMemoryLimits(value).max_run_bytes; },
      py::arg("value") = py::none(),
      "The run memory cap `value` stands for, in bytes (0: none), as Runtime.run and QuantizedModel.run read "
      "their max_run_bytes: an int, or '512M' / '8G'; None reads NPUC_MAX_RUN_BYTES. ConfigError when "
      "invalid.");
  py::class_<Runtime>(m, "Runtime", "A model compiled for the FP32 host executor (thread-safe).")
      .def(py::init<const Model&, std::optional<bool>, bool>(), py::arg("model"),
           py::arg("host_fusion") = py::none(), py::arg("channels_last") = true,
           "Compiles the model: kernels, host fusion and the static memory plan. host_fusion=None follows "
           "NPUC_HOST_FUSION (on unless '0', 'off' or 'false'). channels_last (with host fusion): chained "
           "convolutions hand activations to each other channels-last, converting only at region edges.")
      .def(
          "run", &runRuntime, py::arg("inputs"), py::arg("max_run_bytes") = py::none(),
          "Runs the model on a list of numpy arrays (one per input, in order) and returns the outputs. "
          "Refused with ResourceError, before anything is allocated, when the outputs and activation arena "
          "exceed max_run_bytes (an int, or '512M', '8G'; None: the NPUC_MAX_RUN_BYTES environment variable, "
          "else no cap) or the memory the machine has available.")
      .def("profile", &profileRuntime, py::arg("inputs"), py::arg("runs") = 10,
           "Runs the model `runs` times and returns, per compiled node in run order, (node name, op type, "
           "mean ms per run). The graph is the compiled one (dump()): fused Conv chains show as ConvAct. "
           "Plain run() reads no clock.")
      .def_property_readonly(
          "inputs", [](const Runtime& rt) { return ioInfoList(rt.executor().inputs()); },
          "Inputs: list of {'name', 'dtype', 'shape'} dicts.")
      .def_property_readonly(
          "outputs", [](const Runtime& rt) { return ioInfoList(rt.executor().outputs()); },
          "Outputs: list of {'name', 'dtype', 'shape'} dicts.")
      .def_property_readonly(
          "memory_stats", [](const Runtime& rt) { return memoryStatsDict(rt.executor()); },
          "Activation arena size and its lower bound, kernel workspace and constant bytes.")
      .def(
          "dump", [](const Runtime& rt) { return rt.executor().compiledGraph().dump(); },
          "The graph as compiled (after host fusion).");
}

}  // namespace npuc::bindings
