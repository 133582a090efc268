#include "perf/perf_report.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

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
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + ")";
}

std::string rule(size_t width) {
  return std::string(width, '-') + "\n";
}

}  // namespace

std::string PerfReport::toText() const {
  std::ostringstream o;
  o << std::fixed;
  const size_t width = 170;
  o << rule(width) << "Network Layer Information Table  (soc " << soc << ", " << dtype << ", " << cores
    << (cores == 1 ? " NPU core" : " NPU cores") << " at " << std::setprecision(0) << clock_mhz << " MHz)\n"
    << rule(width);
  o << std::left << std::setw(5) << "ID" << std::setw(22) << "OpType" << std::setw(9) << "DataType"
    << std::setw(7) << "Target" << std::setw(18) << "InputShape" << std::setw(18) << "OutputShape"
    << std::right << std::setw(11) << "DDRCycles" << std::setw(11) << "NPUCycles" << std::setw(12)
    << "TotalCycles" << std::setw(10) << "Time(us)" << std::setw(12) << "MacUsage(%)" << std::setw(10)
    << "RW(KB)" << std::setw(11) << "TaskNumber"
    << "  " << std::left << std::setw(11) << "Bottleneck"
    << "FullName\n";
  for (const PerfRow& r : rows) {
    o << std::left << std::setw(5) << r.id << std::setw(22) << r.op_type << std::setw(9) << r.data_type
      << std::setw(7) << deviceName(r.target) << std::setw(18) << shapeText(r.input_shape) << std::setw(18)
      << shapeText(r.output_shape) << std::right << std::setprecision(0) << std::setw(11) << r.ddr_cycles
      << std::setw(11) << r.npu_cycles << std::setw(12) << r.total_cycles << std::setprecision(1)
      << std::setw(10) << r.time_us << std::setprecision(2) << std::setw(12) << r.mac_usage_pct
      << std::setprecision(1) << std::setw(10) << r.rw_kb << std::setw(11) << r.task_number << "  "
      << std::left << std::setw(11) << r.bottleneck << r.full_name << "\n";
  }
  o << rule(width);
  const PerfSummary& s = summary;
  o << std::setprecision(1) << "Total time (us): " << s.total_time_us << "   FPS: " << std::setprecision(2)
    << s.fps << "\n"
    << std::setprecision(1) << "DDR traffic per frame (KB): " << s.ddr_bytes_per_frame / 1024.0 << "\n"
    << "NPU time (us): " << s.npu_time_us << " in " << s.npu_tasks
    << " tasks   CPU time (us): " << s.cpu_time_us << " in " << s.cpu_ops
    << " ops   hand-over (us): " << s.handover_time_us << " for " << s.handovers << " tensors\n"
    << "Tiling cache: " << tiling_cache_hits << " hits, " << tiling_cache_misses << " misses\n";
  o << rule(width) << "Operator Time Consuming Ranking Table\n" << rule(width);
  o << std::left << std::setw(24) << "OpType" << std::right << std::setw(10) << "CallNumber" << std::setw(14)
    << "Time(us)" << std::setw(12) << "Share(%)\n";
  for (const OpTypeRank& k : ranking)
    o << std::left << std::setw(24) << k.op_type << std::right << std::setw(10) << k.count
      << std::setprecision(1) << std::setw(14) << k.time_us << std::setprecision(2) << std::setw(11)
      << k.share_pct << "\n";
  for (const std::string& w : warnings) o << "warning: " << w << "\n";
  return o.str();
}

}  // namespace npuc::perf
