#include "perf/perf_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>

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
  double t = 0;
  for (PerfRow& r : rows) {
    r.start_us = t;
    r.end_us = t += r.time_us;
  }
  summary.core_busy_us = {summary.npu_time_us};
  summary.core_utilization_pct = {
      summary.total_time_us > 0 ? 100.0 * summary.npu_time_us / summary.total_time_us : 0};
}

void PerfReport::applySchedule(const sched::CoreSchedule& schedule, const sched::Timeline& timeline,
                               const std::vector<uint32_t>& task_of_row, const std::string& source) {
  const double mhz = clock_mhz;
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t id = task_of_row.at(i);
    const sched::TaskOnCores& e = schedule.tasks.at(id);
    const sched::TaskTiming& tt = timeline.tasks.at(id);
    rows[i].cores = sched::coreMaskName(e.core_mask);
    rows[i].split = sched::splitName(e.split);
    rows[i].start_us = tt.start / mhz;
    rows[i].end_us = tt.end / mhz;
  }
  cores = schedule.cores;
  schedule_source = source;
  summary.total_time_us = timeline.makespan / mhz;
  summary.fps = summary.total_time_us > 0 ? 1e6 / summary.total_time_us : 0;
  summary.sync_time_us = timeline.sync_cycles / mhz;
  summary.contention_time_us = timeline.contention_cycles / mhz;
  summary.core_busy_us.clear();
  summary.core_utilization_pct.clear();
  for (double busy : timeline.core_busy) {
    summary.core_busy_us.push_back(busy / mhz);
    summary.core_utilization_pct.push_back(timeline.makespan > 0 ? 100.0 * busy / timeline.makespan : 0);
  }
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
  // Several cores: each row's cores, split and start time come before the names.
  const bool multi = cores > 1;
  if (multi) {  // the header line ends in "FullName\n": put the core columns before it
    o.resize(o.size() - std::string_view("FullName\n").size());
    fmt::format_to(out, "{:<7}{:<7}{:>10}  FullName\n", "Cores", "Split", "Start(us)");
  }
  for (const PerfRow& r : rows) {
    fmt::format_to(
        out,
        "{:<5}{:<22}{:<9}{:<7}{:<18}{:<18}{:>11.0f}{:>11.0f}{:>12.0f}{:>10.1f}{:>12.2f}{:>10.1f}{:>11}  "
        "{:<11}",
        r.id, r.op_type, r.data_type, deviceName(r.target), shapeText(r.input_shape),
        shapeText(r.output_shape), r.ddr_cycles, r.npu_cycles, r.total_cycles, r.time_us, r.mac_usage_pct,
        r.rw_kb, r.task_number, r.bottleneck);
    if (multi) fmt::format_to(out, "{:<7}{:<7}{:>10.1f}  ", r.cores, r.split, r.start_us);
    fmt::format_to(out, "{}\n", r.full_name);
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
  if (cores > 1) {
    fmt::format_to(out, "Cores: {} (schedule {})   sync (us): {:.1f}   DDR contention (us): {:.1f}\n", cores,
                   schedule_source, s.sync_time_us, s.contention_time_us);
    for (size_t c = 0; c < s.core_busy_us.size(); ++c)
      fmt::format_to(out, "  core {}: busy {:.1f} us, {:.1f}% utilized\n", c, s.core_busy_us[c],
                     s.core_utilization_pct[c]);
  }
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
