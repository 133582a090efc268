// eval_perf: partition a graph for a SoC, group the NPU nodes into tasks per the profile's fusion
// rules, cost every task with the cost model (MAC tasks tiled through the tiling cache) and
// every CPU op with the CPU model plus its hand-overs, and collect the rows of a PerfReport.
#pragma once

#include "ir/graph.h"
#include "perf/perf_report.h"
#include "perf/tiling.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::perf {

struct PerfOptions {
  OpTargetMap op_target;  // as for partitionGraph
  // One NPU core per task (RKNN's default core mask); otherwise every task spreads its compute
  // over all cores while sharing the DDR bandwidth.
  bool single_core_mode = false;
  NpuDType dtype = NpuDType::Int8;
};

// Costs `graph` (static shapes; run optimize() first so BatchNorm is folded into Conv). `cache`
// may be null; when given, tiling decisions are read from and added to it.
PerfReport evaluatePerf(const Graph& graph, const SocProfile& soc, const PerfOptions& options,
                        TilingCache* cache = nullptr);

}  // namespace npuc::perf
