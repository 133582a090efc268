// The eval_perf report: one row per NPU task (fusion group or single op) or CPU op, a summary and
// an op-type ranking computed from the rows, and a text rendering like RKNN's eval_perf table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "sched/core_scheduler.h"
#include "target/partition.h"

namespace npuc::perf {

struct PerfRow {
  int64_t id = 0;         // 1-based, in execution order
  std::string op_type;    // fusion pattern ("Conv+Clip") or the op type
  std::string data_type;  // "INT8", "FP16", ... for NPU rows, "FP32" for CPU rows
  Device target = Device::Npu;
  Shape input_shape;   // first non-constant input
  Shape output_shape;  // the task's output
  double ddr_cycles = 0;
  double npu_cycles = 0;  // MAC array / vector unit cycles
  // NPU-clock cycles of the whole row: max(DDR, NPU) + task overhead, plus any hand-over; for CPU
  // rows, the CPU time expressed in NPU cycles.
  double total_cycles = 0;
  double time_us = 0;      // total_cycles at the NPU clock (hand-over included)
  double handover_us = 0;  // part of time_us: NPU<->CPU hand-overs of the tensors this row reads
  int64_t handovers = 0;
  double mac_usage_pct = 0;  // useful MACs / (NPU cycles of the task * array MACs per cycle)
  double rw_kb = 0;          // DDR bytes read and written / 1024
  int64_t task_number = 0;   // NPU tasks (1 per NPU row, 0 for CPU rows)
  int64_t tiles = 0;         // hardware passes of the task (output-channel blocks x row bands)
  int64_t macs = 0;          // useful MACs
  std::string bottleneck;    // "DDR", "NPU" or "CPU"
  std::string full_name;     // the node names, '+'-joined
  // Multi-core placement (sched/core_scheduler.h): the cores running the task ("0", "0_1_2", "-"
  // for the host), how it is split, and when it runs in the frame.
  std::string cores = "0";
  std::string split = "whole";
  double start_us = 0, end_us = 0;
};

struct PerfSummary {
  double total_time_us = 0;
  double fps = 0;
  double ddr_bytes_per_frame = 0;
  double npu_time_us = 0;  // NPU rows without their hand-over time
  double cpu_time_us = 0;  // CPU rows without their hand-over time
  double handover_time_us = 0;
  int64_t handovers = 0;
  int64_t npu_tasks = 0;
  int64_t cpu_ops = 0;
  int64_t total_macs = 0;
  // Multi-core: per core, the time it runs task parts and that over the total time; the time lost
  // to cross-core synchronization and to DDR contention between cores (both inside total_time_us).
  std::vector<double> core_busy_us;
  std::vector<double> core_utilization_pct;
  double sync_time_us = 0;
  double contention_time_us = 0;
};

struct OpTypeRank {
  std::string op_type;
  int64_t count = 0;
  double time_us = 0;
  double share_pct = 0;  // of the total time
};

PerfSummary summarize(const std::vector<PerfRow>& rows);
// Op types by descending time (ties by name).
std::vector<OpTypeRank> rankOpTypes(const std::vector<PerfRow>& rows);

struct PerfReport {
  std::string soc;
  std::string dtype;
  int64_t cores = 1;
  double clock_mhz = 0;
  std::vector<PerfRow> rows;
  PerfSummary summary;
  std::vector<OpTypeRank> ranking;
  int64_t tiling_cache_hits = 0;
  int64_t tiling_cache_misses = 0;
  std::vector<std::string> warnings;

  // Where the core schedule came from ("compiled", "the blob", "decided afresh ...").
  std::string schedule_source = "one core";

  // Recomputes summary and ranking from the rows (one core: rows back to back).
  void finalize();
  // Places the rows on the cores: row i is task task_of_row[i] of `schedule`, timed by `timeline`.
  // The total time becomes the timeline's end; rows get their cores, split and start/end.
  void applySchedule(const sched::CoreSchedule& schedule, const sched::Timeline& timeline,
                     const std::vector<uint32_t>& task_of_row, const std::string& source);
  std::string toText() const;
};

}  // namespace npuc::perf
