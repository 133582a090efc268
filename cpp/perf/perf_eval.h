// eval_perf: partition a graph for a SoC, group the NPU nodes into tasks per the profile's fusion
// rules, cost every task with the cost model (MAC tasks tiled through the tiling cache) and
// every CPU op with the CPU model plus its hand-overs, and collect the rows of a PerfReport.
#pragma once

#include <optional>

#include "ir/graph.h"
#include "perf/cost_constants.h"
#include "perf/perf_report.h"
#include "perf/task_grouping.h"
#include "perf/tiling.h"
#include "quant/quant_scheme.h"
#include "sched/core_scheduler.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::perf {

struct PerfOptions {
  OpTargetMap op_target;  // as for partitionGraph
  // One NPU core per task (RKNN's default core mask); otherwise every task spreads its compute
  // over all cores while sharing the DDR bandwidth.
  bool single_core_mode = false;
  // evaluatePerf without single_core_mode: the NPU cores the schedule may use (0: all the SoC's).
  int64_t cores = 0;
  NpuDType dtype = NpuDType::Int8;
  // A quantized build's scheme (quantized_dtype): how its MAC tasks store weights and biases
  // (WeightFormat). Unset: weights in each task's dtype, int32 biases (w8a8 and float builds).
  std::optional<quant::QuantScheme> scheme;
  // The cost model's structural constants (defaults: docs/perf_model.md); changed by the fit only.
  CostConstants constants;
};

// Costs `graph` (static shapes; run optimize() first so BatchNorm is folded into Conv) as it would
// compile: partitioned with options.op_target, grouped per the profile's fusion rules, every NPU
// task in options.dtype (float-only ops in the SoC's 16-bit format). For a model not compiled yet;
// a compiled model's own tasks are costed by evaluateTasks (compile/compiled_reports.h). `cache`
// may be null; when given, tiling decisions are read from and added to it.
// Unless options.single_core_mode (or on a one-core SoC), the tasks are then placed on all the
// SoC's cores by the core scheduler, decided afresh (sched/core_scheduler.h).
PerfReport evaluatePerf(const Graph& graph, const SocProfile& soc, const PerfOptions& options,
                        TilingCache* cache = nullptr);

// One task as compiled: its nodes and the dtype the NPU computes it in (ignored for CPU tasks).
struct CostedTask {
  TaskNodes task;
  NpuDType dtype = NpuDType::Int8;
  // An in-place Concat (memory/concat_in_place.h): its producers wrote its output, it runs nothing
  // and costs nothing.
  bool in_place = false;
  // The cost model's structural constants (defaults: docs/perf_model.md); changed by the fit only.
  CostConstants constants;
};

// Costs the given tasks (a compiled program's, in execution order) on `placement`; options.dtype
// names the model's dtype in the report header, options.op_target is not read. With `work`, each
// row's task is also described for the core scheduler (one entry per row, `reads` as row indices
// from the graph's data flow, splits over 2..SoC cores); that needs options.single_core_mode, as
// every part is costed on one core.
PerfReport evaluateTasks(const Graph& graph, const SocProfile& soc, const PartitionReport& placement,
                         const std::vector<CostedTask>& tasks, const PerfOptions& options,
                         TilingCache* cache = nullptr, std::vector<sched::TaskWork>* work = nullptr);

}  // namespace npuc::perf
