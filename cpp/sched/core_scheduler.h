// The multi-core scheduler (issue #18): decides, for a program and a number of usable NPU cores,
// which cores run each task and how a task is split among them (sched::CoreSchedule), and times a
// schedule as a per-core timeline. It knows nothing of graphs or the cost model: the caller gives
// each task's cost on one core and on 2..n cores per split kind (perf/perf_eval.h), and what it
// reads. docs/perf_model.md "Multi-core" describes the model; the CSCH blob section stores the
// schedules (docs/blob_format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "blob/blob_format.h"
#include "sched/core_schedule.h"

namespace npuc::sched {

// The optional blob section holding CompiledModel::core_schedules.
constexpr uint32_t kSectionCoreSchedules = blob::fourcc("CSCH");

// One core's share of a task in NPU cycles: at one core's MAC rate, with the whole DDR bandwidth
// to itself (the timeline slows the DDR part down when other cores use it at the same time).
struct PartCost {
  double compute_cycles = 0;
  double ddr_cycles = 0;
  double overhead_cycles = 0;
  double busy() const {
    return (compute_cycles > ddr_cycles ? compute_cycles : ddr_cycles) + overhead_cycles;
  }
};

// A way to divide a task over `parts` cores; `part` is the largest part (the one the others wait for).
struct SplitOption {
  CoreSplit split = CoreSplit::Whole;
  uint32_t parts = 1;
  PartCost part;
};

// What the scheduler knows of one program task.
struct TaskWork {
  // false: a CPU op or a Convert, run by the host. A CPU op (`barrier`) runs when every earlier task
  // has finished and delays every later one, as RKNN's runtime runs CPU ops between NPU submissions;
  // a Convert (no barrier, usually zero cost: costed as its reader's hand-over) only waits for its reads.
  bool on_npu = true;
  bool barrier = false;
  PartCost whole;            // on one core; a host task's time is its overhead_cycles
  double serial_cycles = 0;  // hand-overs before the task: no split shortens them
  // ids of earlier tasks it must start after: those whose outputs it reads, and (for a compiled
  // program) those using arena bytes its outputs reuse (sched/arena_hazards.h)
  std::vector<uint32_t> reads;
  std::vector<SplitOption> splits;  // the splits the task allows (none: whole only)
};

struct TaskTiming {
  double start = 0, end = 0;     // NPU cycles from the frame's start
  double sync_cycles = 0;        // cross-core waits and the split barrier
  double contention_cycles = 0;  // DDR time lost to other cores' traffic
};

struct Timeline {
  std::vector<TaskTiming> tasks;  // per program task
  std::vector<double> core_busy;  // per core: cycles running task parts
  double makespan = 0;
  double sync_cycles = 0;
  double contention_cycles = 0;
};

// The schedule for `cores` usable cores (1 .. 32): every NPU task on the earliest-finishing choice
// among whole on one core and each allowed split over the earliest-free cores, host tasks on no
// core (mask 0). Never slower than the schedule for cores - 1, which it keeps when the greedy choice
// would be (`fewer`: that schedule when already made, else it is made here). `sync_cycles`: the
// SoC's core_sync_cycles.
CoreSchedule scheduleCores(const std::vector<TaskWork>& work, uint32_t cores, double sync_cycles,
                           const CoreSchedule* fewer = nullptr);

// Times `schedule` (checkSchedule first). InputError when it names a split `work` does not offer.
Timeline timeSchedule(const std::vector<TaskWork>& work, const CoreSchedule& schedule, double sync_cycles);

// InputError unless `schedule` has one entry per task in order, masks within its `cores` (at most
// `soc_cores`), host tasks on no core, split parts matching the mask and waits on earlier tasks.
// `on_npu[i]`: task i runs on the NPU.
void checkSchedule(const CoreSchedule& schedule, const std::vector<bool>& on_npu, uint32_t soc_cores);

// "0", "0_1", "0_1_2" (RKNN's NPU_CORE_* suffixes); "-" for no core.
std::string coreMaskName(uint32_t mask);
const char* splitName(CoreSplit s);  // "whole", "oc", "rows", "batch"
uint32_t maskCores(uint32_t mask);   // bits set

// The CSCH payload (docs/blob_format.md). decode throws BlobError naming the offset.
std::string encodeCoreSchedules(const std::vector<CoreSchedule>& schedules);
std::vector<CoreSchedule> decodeCoreSchedules(std::string_view bytes);

}  // namespace npuc::sched
