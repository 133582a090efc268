// Memory-aware operator order (issue #19): the activation arena is planned for one execution order
// of the graph's nodes, and its lower bound (max over steps of the live arena bytes,
// npu_memory_plan.h) depends on that order. The exporter's order is one topological order among
// many; running independent branches in another order can shrink the peak (as TFLite Micro, TVM
// and Liberis & Lane's "operator reordering for microcontrollers" do).
//
// The unit of ordering is a step, as the memory plan and the task grouping see it: a fused group
// (target/fusion_groups.h) is one step, run at its last member; every other node is a step. Buffers are sized
// and live exactly as planNpuMemory sizes them (NPU or host format, converted copies across devices, graph
// inputs and outputs outside the arena), so a candidate's bound here is the bound the plan will report for
// it.
//
// Candidates: the exporter order itself, greedy list schedules over the ready set (the step that
// leaves the fewest live bytes behind it, with and without a preference for staying on the same
// device), branch-at-a-time depth-first orders (Sethi-Ullman: from each join, the input branch
// that needs the most memory runs first), and, within a budget, the exact minimum-peak order by
// dynamic programming over the sets of steps already run (Liberis & Lane; skipped for graphs too
// wide for the budget). The candidate with the smallest bound wins; the exporter
// order wins ties, so the chosen order is never worse. A candidate that switches between NPU and
// CPU more often than the exporter order is rejected (each switch is a hand-over sync that costs
// time), whatever it saves. The compile driver (compile/compiled_model.cpp) then tries the
// candidates best first and keeps one only if the fusion groups and the partition come out the
// same and no core count's predicted time gets worse.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::memory {

struct OrderCandidate {
  std::string name;
  uint64_t bound_bytes = 0;        // max over steps of the live arena bytes in this order
  size_t device_switches = 0;      // NPU<->CPU changes between consecutive steps
  bool rejected = false;           // more device switches than the exporter order
  std::vector<const Node*> nodes;  // every node, in this order, each fused group contiguous
  // The same steps with each group's non-last members as early as their inputs allow, for when
  // the contiguous list would let another anchor take a group's residual Add (the .cpp's emitNodes).
  std::vector<const Node*> anchors_early;
};

struct MemoryOrder {
  std::string name = "exporter";  // the candidate chosen
  // Every node of the graph, in the chosen order (a candidate's nodes or anchors_early).
  std::vector<const Node*> nodes;
  uint64_t exporter_bound_bytes = 0;
  uint64_t bound_bytes = 0;                // of the chosen order (<= exporter_bound_bytes)
  std::vector<OrderCandidate> candidates;  // every candidate tried, the exporter order first
  bool changed() const { return name != "exporter"; }
};

// The order of `graph`'s nodes that minimizes the arena lower bound among the candidates above,
// for `placement` (partitionGraph of `graph`) and `quant_plan` (null: a float build). Alignment as
// the memory plan's (kArenaAlignment).
MemoryOrder chooseMemoryOrder(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                              const PartitionReport& placement);

// The arena lower bound of running `graph`'s nodes in `order` (a topological permutation of
// graph.nodes(): GraphError otherwise). A fusion group runs at its last member, as in the memory plan.
uint64_t orderLowerBound(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                         const PartitionReport& placement, const std::vector<const Node*>& order);

// A bound no topological order goes below: max over steps of the bytes the step reads and writes
// plus those of every buffer written before it and read after it in every order (an ancestor's
// output that a descendant reads). When the exporter's bound equals it, the exporter's order is
// already optimal. Quadratic in the steps (ancestor sets): for reports and benchmarks, not run by
// the compile driver.
uint64_t orderFloorBytes(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                         const PartitionReport& placement);

// NPU<->CPU changes between consecutive nodes of `order` (a fused group is all NPU, so a
// contiguous one adds none).
size_t deviceSwitches(const PartitionReport& placement, const std::vector<const Node*>& order);

// A deep copy of `graph` whose node list is `order` (nodes of `graph`; GraphError if it is not a
// topological permutation of them).
std::unique_ptr<Graph> reorderedCopy(const Graph& graph, const std::vector<const Node*>& order);

}  // namespace npuc::memory
