#include "compile/compiled_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "compile/compiled_reports.h"
#include "lower/lower.h"
#include "memory/memory_aware_order.h"
#include "target/fusion_groups.h"

namespace npuc {

namespace {

// The fusion groups of `graph`, each as its members' positions in `original` order; `to_original`
// maps a node of `graph` to its node there.
std::set<std::vector<size_t>> groupsByPosition(const Graph& graph, const PartitionReport& placement,
                                               const SocProfile& soc,
                                               const std::unordered_map<const Node*, size_t>& to_original) {
  std::set<std::vector<size_t>> out;
  for (const FusionGroup& g : fusionGroups(graph, soc, placement)) {
    std::vector<size_t> members;
    for (const Node* n : g.nodes()) members.push_back(to_original.at(n));
    out.insert(std::move(members));
  }
  return out;
}

// Runs the graph in the memory-aware order when one beats the exporter's: `graph` and `placement`
// become a reordered copy and its partition. The partition and the fusion groups are re-derived
// from the copy (a loaded blob re-derives them the same way); a candidate is kept only if every
// node lands on the same device for the same reason and the groups are the same (a different group
// would change the program and its numerics). Candidates are tried best first; when none passes,
// the exporter's order stays. Returns the order the plan is for.
memory::MemoryOrder applyMemoryOrder(std::shared_ptr<const Graph>& graph, PartitionReport& placement,
                                     const quant::QuantPlan* plan, const SocProfile& soc,
                                     const CompileOptions& options) {
  memory::MemoryOrder order;
  if (options.node_order == NodeOrder::Exporter) return order;
  order = memory::chooseMemoryOrder(*graph, plan, soc, placement);
  if (!order.changed()) return order;
  std::unordered_map<const Node*, size_t> original;
  for (const Node* n : graph->nodes()) original.emplace(n, original.size());
  const std::set<std::vector<size_t>> groups = groupsByPosition(*graph, placement, soc, original);
  std::vector<const memory::OrderCandidate*> better;
  for (const memory::OrderCandidate& c : order.candidates)
    if (!c.rejected && c.bound_bytes < order.exporter_bound_bytes) better.push_back(&c);
  std::stable_sort(better.begin(), better.end(),
                   [](const auto* a, const auto* b) { return a->bound_bytes < b->bound_bytes; });
  for (const memory::OrderCandidate* c : better) {
    for (const std::vector<const Node*>* nodes : {&c->nodes, &c->anchors_early}) {
      std::shared_ptr<const Graph> copy = memory::reorderedCopy(*graph, *nodes);
      PartitionReport moved = partitionGraph(*copy, soc, options.op_target);
      std::unordered_map<const Node*, size_t> to_original;
      size_t k = 0;
      for (const Node* n : copy->nodes()) to_original.emplace(n, original.at((*nodes)[k++]));
      bool same = moved.nodes.size() == nodes->size();
      for (size_t i = 0; same && i < moved.nodes.size(); ++i) {
        const NodePlacement& was = placement.placementOf((*nodes)[i]);
        same = moved.nodes[i].device == was.device && moved.nodes[i].reason == was.reason;
      }
      if (!same || groupsByPosition(*copy, moved, soc, to_original) != groups) continue;
      order.name = c->name;
      order.bound_bytes = c->bound_bytes;
      order.nodes = *nodes;
      graph = std::move(copy);
      placement = std::move(moved);
      return order;
    }
  }
  order.name = "exporter";
  order.bound_bytes = order.exporter_bound_bytes;
  order.nodes = order.candidates.front().nodes;
  return order;
}

}  // namespace

CompiledModel compileModel(std::shared_ptr<const Graph> graph, const quant::QuantPlan* plan,
                           const SocProfile& soc, CompileOptions options, perf::TilingCache* tiling_cache) {
  if (options.quantized != (plan != nullptr))
    throw ConfigError(std::string("compile: options say ") + (options.quantized ? "quantized" : "float") +
                      " but " + (plan ? "a quantization plan was given" : "no quantization plan was given"));
  if (plan) {
    // The scheme is decided once, in the plan; the options only record it.
    if (quantSchemeOf(options) != plan->scheme) {
      throw ConfigError(fmt::format("compile: options say quantized_dtype {} but the quantization plan is {}",
                                    quant::describeScheme(quantSchemeOf(options)),
                                    quant::describeScheme(plan->scheme)));
    }
    requireQuantizedDtype(soc, plan->scheme.dtype);
  }
  CompiledModel m;
  m.soc = &soc;
  if (plan) m.quant_plan = *plan;
  m.placement = partitionGraph(*graph, soc, options.op_target);
  // Decided before lowering, so the program's tasks, the memory plan, the blob's graph and every
  // report follow the one order.
  const std::shared_ptr<const Graph> exporter_graph = graph;
  memory::MemoryOrder order = applyMemoryOrder(graph, m.placement, plan, soc, options);
  m.graph = std::move(graph);
  m.memory_plan = memory::planNpuMemory(*m.graph, m.quantPlan(), soc, m.placement);
  if (order.changed() && m.memory_plan->lower_bound_bytes != order.bound_bytes) {
    // The order's bound was predicted from the same buffers the plan makes; should they ever
    // disagree, the exporter's order is the safe choice (its bound is the reference).
    m.graph = exporter_graph;
    m.placement = partitionGraph(*m.graph, soc, options.op_target);
    m.memory_plan = memory::planNpuMemory(*m.graph, m.quantPlan(), soc, m.placement);
    order.name = "exporter";
  }
  m.memory_plan->order = order.name;
  // In the exporter's order the plan's own bound is the exporter's (no prediction involved).
  m.memory_plan->exporter_order_bound_bytes =
      order.changed() ? order.exporter_bound_bytes : m.memory_plan->lower_bound_bytes;
  lower::LowerOptions lo;
  lo.placement = &m.placement;
  lo.single_core_mode = options.single_core_mode;
  lo.plan = m.quantPlan();
  lo.tiling_cache = tiling_cache;
  m.program = lower::lowerGraph(*m.graph, soc, lo);
  m.options = std::move(options);
  // Decided once here, for every core count the runtime may be given; eval_perf reads them.
  m.core_schedules = compiledCoreSchedules(m, tiling_cache);
  return m;
}

}  // namespace npuc
