// eval_perf: the simulated per-layer performance report of a Model on a SoC (cpp/perf), as plain
// Python dicts for python/npuc/perf.py to wrap.
#include <pybind11/stl.h>

#include <memory>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "common/error.h"
#include "passes/optimize.h"
#include "perf/perf_eval.h"

namespace npuc::bindings {

namespace {

py::dict rowDict(const perf::PerfRow& r) {
  py::dict d;
  d["ID"] = r.id;
  d["OpType"] = r.op_type;
  d["DataType"] = r.data_type;
  d["Target"] = deviceName(r.target);
  d["InputShape"] = py::tuple(py::cast(r.input_shape));
  d["OutputShape"] = py::tuple(py::cast(r.output_shape));
  d["DDRCycles"] = r.ddr_cycles;
  d["NPUCycles"] = r.npu_cycles;
  d["TotalCycles"] = r.total_cycles;
  d["Time(us)"] = r.time_us;
  d["MacUsage(%)"] = r.mac_usage_pct;
  d["RW(KB)"] = r.rw_kb;
  d["TaskNumber"] = r.task_number;
  d["Tiles"] = r.tiles;
  d["MACs"] = r.macs;
  d["Handover(us)"] = r.handover_us;
  d["Handovers"] = r.handovers;
  d["Bottleneck"] = r.bottleneck;
  d["FullName"] = r.full_name;
  d["Cores"] = r.cores;
  d["Split"] = r.split;
  d["Start(us)"] = r.start_us;
  d["End(us)"] = r.end_us;
  return d;
}

py::dict summaryDict(const perf::PerfReport& rep, const perf::CostModel& model) {
  const perf::PerfSummary& s = rep.summary;
  py::dict d;
  d["soc"] = rep.soc;
  d["dtype"] = rep.dtype;
  d["cores"] = rep.cores;
  d["clock_mhz"] = rep.clock_mhz;
  d["total_time_us"] = s.total_time_us;
  d["fps"] = s.fps;
  d["ddr_bytes_per_frame"] = s.ddr_bytes_per_frame;
  d["npu_time_us"] = s.npu_time_us;
  d["cpu_time_us"] = s.cpu_time_us;
  d["handover_time_us"] = s.handover_time_us;
  d["handovers"] = s.handovers;
  d["npu_tasks"] = s.npu_tasks;
  d["cpu_ops"] = s.cpu_ops;
  d["total_macs"] = s.total_macs;
  d["tiling_cache_hits"] = rep.tiling_cache_hits;
  d["tiling_cache_misses"] = rep.tiling_cache_misses;
  d["core_busy_us"] = s.core_busy_us;
  d["core_utilization_pct"] = s.core_utilization_pct;
  d["sync_time_us"] = s.sync_time_us;
  d["contention_time_us"] = s.contention_time_us;
  d["schedule_source"] = rep.schedule_source;
  // The roofline's two roofs: the MAC array's peak and the sustained DDR bandwidth.
  d["peak_macs_per_s"] = model.macsPerCycle(model.dtype()) * model.clockHz();
  d["ddr_bytes_per_s"] = model.sustainedDdrBytesPerCycle() * model.clockHz();
  return d;
}

}  // namespace

py::dict perfReportDict(const perf::PerfReport& report, const perf::CostModel& model) {
  py::list rows, ranking;
  for (const perf::PerfRow& r : report.rows) rows.append(rowDict(r));
  for (const perf::OpTypeRank& k : report.ranking) {
    py::dict d;
    d["OpType"] = k.op_type;
    d["CallNumber"] = k.count;
    d["Time(us)"] = k.time_us;
    d["Share(%)"] = k.share_pct;
    ranking.append(d);
  }
  py::dict out;
  out["rows"] = rows;
  out["summary"] = summaryDict(report, model);
  out["ranking"] = ranking;
  out["warnings"] = report.warnings;
  out["text"] = report.toText();
  return out;
}

namespace {

// The profile figures the calibration fit may override (bench/perf_fit.py).
SocProfile withOverrides(SocProfile soc, const std::map<std::string, double>& overrides,
                         perf::CostConstants& constants) {
  for (const auto& [key, value] : overrides) {
    if (key.rfind("const.", 0) == 0) {
      constants.set(key.substr(6), value);
    } else if (!(value > 0)) {
      throw ConfigError("eval_perf: override '" + key + "' must be positive");
    } else if (key == "npu.ddr_bytes_per_cycle") {
      soc.npu.ddr_bytes_per_cycle = value;
    } else if (key == "npu.ddr_efficiency") {
      soc.npu.ddr_efficiency = value;
    } else if (key == "npu.task_overhead_cycles") {
      soc.npu.task_overhead_cycles = static_cast<int64_t>(value);
    } else if (key == "npu.onchip_buffer_bytes") {
      soc.npu.onchip_buffer_bytes = static_cast<int64_t>(value);
    } else {
      throw ConfigError("eval_perf: unknown override '" + key +
                        "' (npu.ddr_bytes_per_cycle, npu.ddr_efficiency, npu.task_overhead_cycles, "
                        "npu.onchip_buffer_bytes, const.<cost constant>)");
    }
  }
  return soc;
}

py::dict evalPerf(const Model& m, const std::string& soc_name, const OpTargetMap& op_target,
                  bool single_core_mode, const std::string& dtype, bool run_optimize,
                  const std::string& tuning_cache, const std::map<std::string, double>& overrides,
                  int64_t cores) {
  perf::CostConstants constants;
  const SocProfile soc = withOverrides(socProfile(soc_name), overrides, constants);
  std::optional<NpuDType> t = npuDTypeFromName(dtype);
  if (!t) throw ConfigError("eval_perf: dtype '" + dtype + "' is not one of int8, int16, fp16, bf16, tf32");
  perf::PerfOptions options;
  options.op_target = op_target;
  options.single_core_mode = single_core_mode;
  options.cores = cores;
  options.dtype = *t;
  options.constants = constants;
  perf::CostModel model(soc, *t,
                        single_core_mode                      ? 1
                        : cores > 0 && cores <= soc.npu.cores ? cores
                                                              : soc.npu.cores,
                        constants);
  perf::TilingCache cache;
  perf::PerfReport report;
  {
    py::gil_scoped_release release;
    if (!tuning_cache.empty()) cache.load(tuning_cache);
    std::unique_ptr<Graph> g = m.graph().clone();
    if (run_optimize) {
      OptimizeOptions opts;  // as Toolkit.build optimizes for this SoC: legalized, not padded
      opts.target = buildTarget(soc_name, dtype, op_target);
      opts.align_channels = false;
      optimize(*g, opts);
    }
    report = perf::evaluatePerf(*g, soc, options, &cache);
    if (!tuning_cache.empty()) cache.save(tuning_cache);
  }
  return perfReportDict(report, model);
}

}  // namespace

void bindPerf(py::module_& m) {
  m.def("eval_perf", &evalPerf, py::arg("model"), py::arg("soc"), py::arg("op_target") = OpTargetMap{},
        py::arg("single_core_mode") = false, py::arg("dtype") = "int8", py::arg("optimize") = true,
        py::arg("tuning_cache") = "", py::arg("overrides") = std::map<std::string, double>{},
        py::arg("cores") = 0,
        "Simulated per-layer performance of `model` on SoC `soc`: {'rows', 'summary', 'ranking', 'warnings', "
        "'text'}. optimize runs the graph passes (BatchNorm folding, ...) on a copy first; tuning_cache "
        "names a "
        "file of tiling decisions read before and written after; overrides replaces profile figures and cost "
        "constants for calibration only; cores: the NPU cores the multi-core schedule may use (0: all).");
}

}  // namespace npuc::bindings
