// Lowering: a placed, optimized (and optionally quantized) graph -> the LoweredProgram the NPU
// runtime executes. Task boundaries are perf::groupTasks' (the ones eval_perf costs), MAC tasks
// are tiled by perf::chooseTiling (through an optional TilingCache), NPU tasks share pipelines by
// digest, Conv weights are packed NC1HWC2 for the NPU, and every tensor crossing NPU <-> host
// (graph inputs and outputs included) gets an explicit Convert task.
#pragma once

#include "ir/graph.h"
#include "lower/lowered_program.h"
#include "perf/tiling.h"
#include "quant/graph/quant_plan.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::lower {

struct LowerOptions {
  // The placement to lower for (the compile driver's, decided once); null: partitionGraph with
  // `op_target`.
  const PartitionReport* placement = nullptr;
  OpTargetMap op_target;  // as for partitionGraph; only read when `placement` is null
  // Tile for one NPU core per task (RKNN's default core mask) instead of all of them.
  bool single_core_mode = false;
  // The quantization plan of an INT8 build (null: a float build, which the NPU runs in FP16).
  const quant::QuantPlan* plan = nullptr;
  perf::TilingCache* tiling_cache = nullptr;  // optional
};

// Throws what partitioning, tiling and weight quantization throw (ConfigError, ShapeError, ...).
LoweredProgram lowerGraph(const Graph& graph, const SocProfile& soc, const LowerOptions& options);

// Checks a (decoded) program against the graph it claims to run: every node in exactly one NPU or
// CPU task, in an order where each task's inputs exist before it runs, node indices / op types /
// value names / pipeline and CPU-op indices valid, packed weights inside the NWGT payload.
// BlobError naming the task and the problem otherwise.
void verifyProgram(const LoweredProgram& program, const Graph& graph);

// Checks that the program runs every node on the device `placement` gives it (NPU tasks on the
// NPU, CPU tasks on the CPU): a blob's program must agree with the partition its recorded build
// options (SoC, op_target) give. BlobError naming the task and node otherwise.
void verifyProgramPlacement(const LoweredProgram& program, const Graph& graph,
                            const PartitionReport& placement);

}  // namespace npuc::lower
