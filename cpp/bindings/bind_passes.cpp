// optimize(): the graph optimizer for Python. The input Model stays untouched (Toolkit.build keeps
// it to verify the optimized graph against), the optimized graph comes back as a new Model.
#include <pybind11/stl.h>

#include <filesystem>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "common/error.h"
#include "frontend/onnx_export.h"
#include "passes/core/pass_registry.h"
#include "passes/optimize.h"
#include "target/soc_profile.h"

namespace npuc::bindings {

namespace {

py::dict reportToDict(const OptimizationReport& r) {
  py::dict d;
  d["optimization_level"] = r.optimization_level;
  d["nodes_before"] = r.nodes_before;
  d["nodes_after"] = r.nodes_after;
  d["rounds"] = r.rounds;
  py::list fired;
  for (const PassFiring& f : r.fired) fired.append(py::make_tuple(f.pass, f.changes));
  d["fired"] = fired;
  d["disabled"] = r.disabled;
  d["skipped_for_level"] = r.skipped_for_level;
  py::list failures;
  for (const MatchFailure& f : r.match_failures) {
    py::dict fd;
    fd["pass"] = f.pass;
    fd["pattern"] = f.pattern;
    fd["node"] = f.node;
    fd["op_type"] = f.op_type;
    fd["reason"] = f.reason;
    failures.append(fd);
  }
  d["match_failures"] = failures;
  d["warnings"] = r.warnings;
  d["text"] = r.toText();
  return d;
}

// Writes check<index>_<stage>.onnx into `dir` after each pipeline stage (RKNN's debug dumps).
StageCallback stageDumper(const std::string& dir) {
  std::filesystem::create_directories(dir);
  return [dir](const std::string& stage, int index, const Graph& graph) {
    const std::string path =
        (std::filesystem::path(dir) / ("check" + std::to_string(index) + "_" + stage + ".onnx")).string();
    exportOnnxFile(graph, path);
  };
}

}  // namespace

PassTarget buildTarget(const std::string& soc, const std::string& dtype, const OpTargetMap& op_target) {
  std::optional<NpuDType> t = npuDTypeFromName(dtype);
  if (!t) throw ConfigError("dtype '" + dtype + "' is not one of int8, int16, fp16, bf16, tf32");
  const SocProfile& profile = socProfile(soc);
  // A SoC without FP16 computes a float build's tasks in int16, as the lowering does.
  if (*t == NpuDType::Float16 && !profile.supportsDtype(*t) && profile.supportsDtype(NpuDType::Int16))
    t = NpuDType::Int16;
  return PassTarget{&profile, *t, op_target};
}

void bindPasses(py::module_& m) {
  m.def(
      "optimize",
      [](const Model& model, int optimization_level, const std::vector<std::string>& disable_passes,
         const std::string& dump_dir, const std::string& soc, const std::string& dtype,
         const OpTargetMap& op_target) {
        auto graph = model.graph().clone();
        OptimizeOptions opts;
        opts.optimization_level = optimization_level;
        opts.disable_passes = disable_passes;
        if (!dump_dir.empty()) opts.on_stage = stageDumper(dump_dir);
        if (!soc.empty()) {
          opts.target = buildTarget(soc, dtype, op_target);
          opts.align_channels = false;  // see OptimizeOptions::align_channels
        }
        OptimizationReport report;
        {
          py::gil_scoped_release release;
          report = optimize(*graph, opts);
        }
        return py::make_tuple(Model(std::shared_ptr<const Graph>(std::move(graph))), reportToDict(report));
      },
      py::arg("model"), py::arg("optimization_level") = 3,
      py::arg("disable_passes") = std::vector<std::string>{}, py::arg("dump_dir") = std::string(),
      py::arg("soc") = std::string(), py::arg("dtype") = std::string("int8"),
      py::arg("op_target") = OpTargetMap{},
      "Runs the graph optimization pipeline on a copy of `model`; returns (optimized Model, report dict). "
      "dump_dir, if given, receives check<N>_<stage>.onnx after each stage. With soc (and the NPU dtype "
      "the build computes in, and the user's op_target), the target stage runs too: rewrites that keep "
      "ops on that SoC's NPU (legalize_conv_stride, legalize_pool_window, reduce_transpose_rank); channels "
      "are "
      "not padded.");
  m.def("pass_names", &registeredPassNames, "Names of every registered graph pass (for disable_passes).");
}

}  // namespace npuc::bindings
