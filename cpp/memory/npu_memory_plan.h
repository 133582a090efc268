// The NPU activation memory plan (issue #6): every intermediate tensor of a compiled model gets an
// offset in one activation arena, allocated once by the runtime, from its live range.
//
// What is planned, and how it is sized:
//   - steps: nodes in topological order; a fused group (target/fusion_groups.h) runs as one NPU
//     task at the step of its last node, and the values inside it (anchor -> activation -> Add)
//     never reach DRAM, so they take no memory at all;
//   - an NPU-side tensor is stored in its NPU dtype (int8 / fp16 / int32 per the QuantPlan; FP16
//     for a float build) with channels padded to the SoC's alignment (npu_buffer_sizes.h);
//   - a tensor produced by a CPU fallback op is stored at its host size (FP32 for float data);
//   - a tensor crossing devices also gets a converted copy on the reading side, live from the
//     hand-over (right after it is produced) to its last reader there;
//   - graph inputs and outputs are separate I/O buffers (the user's, bound at run time, as
//     rknn_inputs_set / rknn_outputs_get do), not in the arena; their converted copies are;
//   - constants are weights (memory_report.h), not activations.
// Offsets and sizes are multiples of kArenaAlignment. The arena is compared with its lower bound,
// max over steps of the sum of the (aligned) bytes live at that step.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "memory/npu_buffer_sizes.h"
#include "quant/graph/quant_plan.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::memory {

// Offset and size granularity of arena buffers. Assumed (the SoC profiles publish no DDR address
// alignment): 64 bytes is a cache line / AXI burst, and the alignment the blob
// (blob::kBlobAlignment) and host tensors (kTensorAlignment) already give, so a buffer can be
// handed to either side without a copy. Every channel-padded int8 NPU tensor is a multiple of 16
// bytes anyway, so rounding to 64 wastes little.
constexpr uint64_t kArenaAlignment = kTensorAlignment;

// Where a planned buffer's bytes live.
enum class BufferHome : uint8_t { Arena = 0, Input = 1, Output = 2 };
const char* bufferHomeName(BufferHome h);  // "arena" / "input" / "output"

struct PlannedBuffer {
  std::string value;  // the graph value it holds
  BufferFormat format = BufferFormat::Npu;
  BufferHome home = BufferHome::Arena;
  DType dtype = DType::Undefined;  // element type as stored
  Shape shape;                     // the value's logical shape (before channel padding)
  uint64_t bytes = 0;              // stored bytes rounded up to the plan's alignment
  int64_t first = 0;               // step that writes it
  int64_t last = 0;                // last step that reads it (>= first)
  uint64_t offset = 0;             // in the arena; 0 for I/O buffers
  // The buffer (index in NpuMemoryPlan::buffers) whose bytes hold this one, or -1: an in-place
  // Concat's input is a slice of its output's buffer (concat_in_place.h), written there by its
  // producer. Such a buffer takes no arena bytes of its own: the bound and the placement count and
  // place only its container, which is live from the first slice written to the last read of any.
  int64_t within = -1;
  bool operator==(const PlannedBuffer& o) const;
};

struct NpuMemoryPlan {
  uint64_t alignment = kArenaAlignment;
  uint64_t arena_bytes = 0;
  uint64_t lower_bound_bytes = 0;  // max over steps of the live arena bytes
  std::string strategy;            // placement order that won (arena_placement.h)
  // The node order the plan is for (memory/memory_aware_order.h): "exporter", or the candidate
  // that beat it, and the lower bound the exporter's order would have had (== lower_bound_bytes
  // when the order is the exporter's). Set by the compile driver; planNpuMemory alone plans the
  // graph's order as given and calls it "exporter".
  std::string order = "exporter";
  uint64_t exporter_order_bound_bytes = 0;
  std::vector<PlannedBuffer> buffers;  // in graph order (inputs, then node outputs)

  uint64_t ioBytes() const;  // sum of the input and output buffers
  // arena / lower bound (1 for an empty arena).
  double ratio() const;
  // lower bound / the exporter order's bound (1 when both are 0): what the node order saved.
  double orderRatio() const;
  // Value names of the buffers other buffers are planned within: the in-place Concats' outputs.
  std::set<std::string> containers() const;
  bool operator==(const NpuMemoryPlan& o) const;
};

// Plans `graph` (static shapes) for `soc`. `quant_plan`: the INT8 build's plan, or null for a
// float build (run in FP16). `placement`: the NPU/CPU partition to plan for (partitionGraph).
// `in_place`: output value names of the Concats whose inputs are planned inside their output
// (concat_in_place.h); GraphError naming the Concat when one of them cannot be.
NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                            const PartitionReport& placement, const std::set<std::string>& in_place = {});

// The arena lower bound planNpuMemory would report for `in_place` (without placing anything), and
// the Concats (output value names, graph order) that can be planned in place one at a time: the
// compile driver chooses among them.
uint64_t plannedLowerBound(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                           const PartitionReport& placement, const std::set<std::string>& in_place);
std::vector<std::string> inPlaceConcatCandidates(const Graph& graph, const quant::QuantPlan* quant_plan,
                                                 const SocProfile& soc, const PartitionReport& placement);
// Same, with the default partition of `graph` on `soc` (no op_target overrides).
NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc);

// Checks that `plan` is a plan of `graph` for `placement`: its buffers (value, format, home,
// dtype, shape, bytes, live range, in order) are exactly those planNpuMemory derives for that
// partition and the plan's own in-place Concats (containers(), each checked to be one that can be
// planned in place, each input at its slice's offset in the container); other offsets are not
// compared (findPlanViolation checks them). Returns the first
// difference as text, "" when they agree. A blob's stored plan is checked this way against the
// partition of its recorded build options (op_target), so a plan for another partition is refused.
std::string findPlanMismatch(const NpuMemoryPlan& plan, const Graph& graph,
                             const quant::QuantPlan* quant_plan, const SocProfile& soc,
                             const PartitionReport& placement);

// Checks the plan's invariants by brute force: offsets and sizes aligned, arena buffers inside
// the arena, and no two arena buffers whose live ranges intersect share a byte; a buffer planned
// within another lies inside it (bytes and live range), in an arena buffer that is itself within
// none, apart from its container's other slices; the bound counts containers only. Returns the
// first violation as text, "" when the plan is sound.
std::string findPlanViolation(const NpuMemoryPlan& plan);

}  // namespace npuc::memory
