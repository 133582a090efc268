// The multi-core schedule of a compiled program (issue #18): which NPU cores run each task, how a
// task split over several cores is divided, and where cores wait for each other. Decided once by
// the compile driver per number of cores the runtime may be given (RKNN's core_mask), stored in
// the blob, and read by eval_perf; the simulator's outputs never depend on it.
#pragma once

#include <cstdint>
#include <vector>

namespace npuc::sched {

// How one task's work is divided among the cores that run it.
enum class CoreSplit : uint8_t {
  Whole = 0,           // one core runs the whole task
  OutputChannels = 1,  // each core computes a block of output channels (reads the whole input)
  Rows = 2,            // each core computes a band of output rows (reads its input rows + halo)
  Batch = 3,           // each core computes some of the batch items
};

struct TaskOnCores {
  uint32_t task = 0;       // LoweredProgram task id
  uint32_t core_mask = 1;  // bit i: core i runs a part of it
  CoreSplit split = CoreSplit::Whole;
  // Tasks (ids) run on other cores that this task must start after (it reads their outputs or
  // reuses their arena bytes): one synchronization per other core among them.
  std::vector<uint32_t> waits_for;
  bool operator==(const TaskOnCores& o) const {
    return task == o.task && core_mask == o.core_mask && split == o.split && waits_for == o.waits_for;
  }
};

// The schedule for `cores` usable cores (1 .. the SoC's count): one entry per program task, in
// program order.
struct CoreSchedule {
  uint32_t cores = 1;
  std::vector<TaskOnCores> tasks;
  bool operator==(const CoreSchedule& o) const { return cores == o.cores && tasks == o.tasks; }
};

}  // namespace npuc::sched
