#include "perf/perf_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

namespace npuc::perf {

PerfSummary summarize(const std::vector<PerfRow>& rows) {
  PerfSummary s;
  for (const PerfRow& r : rows) {
    s.total_time_us += r.time_us;
    s.ddr_bytes_per_frame += r.rw_kb * 1024.0;
    s.handover_time_us += r.handover_us;
    s.handovers += r.handovers;
    s.total_macs += r.macs;
    if (r.target == Device::Npu) {
      s.npu_time_us += r.time_us - r.handover_us;
      s.npu_tasks += r.task_number;
    } else {
      s.cpu_time_us += r.time_us - r.handover_us;
      ++s.cpu_ops;
    }
  }
  s.fps = s.total_time_us > 0 ? 1e6 / s.total_time_us : 0;
  return s;
}

std::vector<OpTypeRank> rankOpTypes(const std::vector<PerfRow>& rows) {
  std::map<std::string, OpTypeRank> by_type;
  double total = 0;
  for (const PerfRow& r : rows) {
    OpTypeRank& k = by_type[r.op_type];
    k.op_type = r.op_type;
    ++k.count;
    k.time_us += r.time_us;
    total += r.time_us;
  }
  std::vector<OpTypeRank> out;
  for (auto& [name, k] : by_type) {
    k.share_pct = total > 0 ? 100.0 * k.time_us / total : 0;
    out.push_back(k);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpTypeRank& a, const OpTypeRank& b) { return a.time_us > b.time_us; });
  return out;
}

void PerfReport::finalize() {
  summary = summarize(rows);
  ranking = rankOpTypes(rows);
}

namespace {

std::string shapeText(const Shape& s) {
  return fmt::format("({})", fmt::join(s, ","));
}

void rule(fmt::memory_buffer& o, size_t width) {
  fmt::format_to(std::back_inserter(o), "{:-<{}}\n", "", width);
}

}  // namespace

std::string PerfReport::toText() const {
  fmt::memory_buffer o;
  auto out = std::back_inserter(o);
  const size_t width = 170;
  rule(o, width);
  fmt::format_to(out, "Network Layer Information Table  (soc {}, {}, {} {} at {:.0f} MHz)\n", soc, dtype,
                 cores, cores == 1 ? "NPU core" : "NPU cores", clock_mhz);
  rule(o, width);
  fmt::format_to(
      out, "{:<5}{:<22}{:<9}{:<7}{:<18}{:<18}{:>11}{:>11}{:>12}{:>10}{:>12}{:>10}{:>11}  {:<11}FullName\n",
      "ID", "OpType", "DataType", "Target", "InputShape", "OutputShape", "DDRCycles", "NPUCycles",
      "TotalCycles", "Time(us)", "MacUsage(%)", "RW(KB)", "TaskNumber", "Bottleneck");
  for (const PerfRow& r : rows) {
    fmt::format_to(
        out,
        "{:<5}{:<22}{:<9}{:<7}{:<18}{:<18}{:>11.0f}{:>11.0f}{:>12.0f}{:>10.1f}{:>12.2f}{:>10.1f}{:>11}  "
        "{:<11}{}\n",
        r.id, r.op_type, r.data_type, deviceName(r.target), shapeText(r.input_shape),
        shapeText(r.output_shape), r.ddr_cycles, r.npu_cycles, r.total_cycles, r.time_us, r.mac_usage_pct,
        r.rw_kb, r.task_number, r.bottleneck, r.full_name);
  }
  rule(o, width);
  const PerfSummary& s = summary;
  fmt::format_to(out, "Total time (us): {:.1f}   FPS: {:.2f}\n", s.total_time_us, s.fps);
  fmt::format_to(out, "DDR traffic per frame (KB): {:.1f}\n", s.ddr_bytes_per_frame / 1024.0);
  fmt::format_to(
      out,
      "NPU time (us): {:.1f} in {} tasks   CPU time (us): {:.1f} in {} ops   hand-over (us): {:.1f} for "
      "{} tensors\n",
      s.npu_time_us, s.npu_tasks, s.cpu_time_us, s.cpu_ops, s.handover_time_us, s.handovers);
  fmt::format_to(out, "Tiling cache: {} hits, {} misses\n", tiling_cache_hits, tiling_cache_misses);
  rule(o, width);
  fmt::format_to(out, "Operator Time Consuming Ranking Table\n");
  rule(o, width);
  fmt::format_to(out, "{:<24}{:>10}{:>14}{:>11}\n", "OpType", "CallNumber", "Time(us)", "Share(%)");
  for (const OpTypeRank& k : ranking)
    fmt::format_to(out, "{:<24}{:>10}{:>14.1f}{:>11.2f}\n", k.op_type, k.count, k.time_us, k.share_pct);
  for (const std::string& w : warnings) fmt::format_to(out, "warning: {}\n", w);
  return fmt::to_string(o);
}

}  // namespace npuc::perf
