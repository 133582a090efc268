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

// The rest of the compile for one node order: memory plan, program, core schedules.
CompiledModel compileInOrder(std::shared_ptr<const Graph> graph, PartitionReport placement,
                             const quant::QuantPlan* plan, const SocProfile& soc,
                             const CompileOptions& options, perf::TilingCache* tiling_cache) {
  CompiledModel m;
  m.soc = &soc;
  if (plan) m.quant_plan = *plan;
  m.graph = std::move(graph);
  m.placement = std::move(placement);
  m.memory_plan = memory::planNpuMemory(*m.graph, m.quantPlan(), soc, m.placement);
  lower::LowerOptions lo;
  lo.placement = &m.placement;
  lo.single_core_mode = options.single_core_mode;
  lo.plan = m.quantPlan();
  lo.tiling_cache = tiling_cache;
  m.program = lower::lowerGraph(*m.graph, soc, lo);
  m.options = options;
  // Decided once here, for every core count the runtime may be given; eval_perf reads them.
  m.core_schedules = compiledCoreSchedules(m, tiling_cache);
  return m;
}

// Whether `m` is predicted no slower than `exporter` on every core count it has a schedule for.
// Single-core time is a sum over the same tasks, but the multi-core list schedule follows the task
// order, so a reordering can lengthen it: memory is not bought with time.
bool noSlower(const CompiledModel& m, const CompiledModel& exporter, perf::TilingCache* tiling_cache) {
  for (const sched::CoreSchedule& s : m.core_schedules) {
    const double mine = compiledPerf(m, tiling_cache, s.cores).summary.total_time_us;
    const double theirs = compiledPerf(exporter, tiling_cache, s.cores).summary.total_time_us;
    if (mine > theirs * (1 + 1e-9)) return false;
  }
  return true;
}

// At most this many reordered compiles per model (each a full lowering and scheduling).
constexpr size_t kMaxOrderTrials = 4;

// Compiles in the memory-aware order when one beats the exporter's, else in the exporter's. Each
// candidate (best bound first) runs on a reordered copy of the graph whose partition and fusion
// groups are re-derived (a loaded blob re-derives them the same way) and must equal the
// exporter's: same device and reason per node, same groups (a different group would change the
// program and its numerics). It is kept only if its plan's bound is the predicted one and it is
// no slower on any core count; otherwise the next is tried, and at the end the exporter's order
// stays.
CompiledModel compileMemoryAware(std::shared_ptr<const Graph> graph, PartitionReport placement,
                                 const quant::QuantPlan* plan, const SocProfile& soc,
                                 const CompileOptions& options, perf::TilingCache* tiling_cache) {
  const memory::MemoryOrder order = memory::chooseMemoryOrder(*graph, plan, soc, placement);
  std::unordered_map<const Node*, size_t> original;
  for (const Node* n : graph->nodes()) original.emplace(n, original.size());
  const std::set<std::vector<size_t>> groups = groupsByPosition(*graph, placement, soc, original);
  CompiledModel exporter = compileInOrder(graph, placement, plan, soc, options, tiling_cache);
  std::vector<const memory::OrderCandidate*> better;
  for (const memory::OrderCandidate& c : order.candidates)
    if (!c.rejected && c.bound_bytes < order.exporter_bound_bytes) better.push_back(&c);
  std::stable_sort(better.begin(), better.end(),
                   [](const auto* a, const auto* b) { return a->bound_bytes < b->bound_bytes; });
  size_t trials = 0;
  for (const memory::OrderCandidate* c : better) {
    for (const std::vector<const Node*>* nodes : {&c->nodes, &c->anchors_early}) {
      if (trials == kMaxOrderTrials) break;
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
      ++trials;
      CompiledModel m = compileInOrder(copy, std::move(moved), plan, soc, options, tiling_cache);
      if (m.memory_plan->lower_bound_bytes != c->bound_bytes || !noSlower(m, exporter, tiling_cache))
        continue;
      m.memory_plan->order = c->name;
      m.memory_plan->exporter_order_bound_bytes = exporter.memory_plan->lower_bound_bytes;
      return m;
    }
  }
  return exporter;
}

// In-place Concats (memory/concat_in_place.h) on `m`'s order, decided once here and recorded in
// its memory plan, which the program runtime and eval_perf read. Candidates are taken greedily in
// graph order, each kept when the arena bound does not grow with it (a slice makes its container
// live from the first input written, which can lift an earlier step; an input is a slice of one
// Concat at most). The whole set is then kept only if the placed arena is no larger and no core
// count's predicted time is worse (the container's longer live range adds reuse hazards to the
// multi-core schedule); otherwise every Concat copies, as before.
CompiledModel withConcatsInPlace(CompiledModel m, perf::TilingCache* tiling_cache) {
  const memory::NpuMemoryPlan& base = *m.memory_plan;
  std::set<std::string> chosen;
  std::set<const Value*> sliced;  // inputs already planned as a chosen Concat's slice
  uint64_t bound = base.lower_bound_bytes;
  for (const std::string& out :
       memory::inPlaceConcatCandidates(*m.graph, m.quantPlan(), *m.soc, m.placement)) {
    const std::vector<Value*>& inputs = m.graph->findValue(out)->producer()->inputs();
    if (std::any_of(inputs.begin(), inputs.end(), [&](const Value* v) { return sliced.count(v) != 0; }))
      continue;
    std::set<std::string> trial = chosen;
    trial.insert(out);
    const uint64_t b = memory::plannedLowerBound(*m.graph, m.quantPlan(), *m.soc, m.placement, trial);
    if (b > bound) continue;
    chosen = std::move(trial);
    bound = b;
    sliced.insert(inputs.begin(), inputs.end());
  }
  if (chosen.empty()) return m;
  CompiledModel c = m;
  c.memory_plan = memory::planNpuMemory(*c.graph, c.quantPlan(), *c.soc, c.placement, chosen);
  // The reference stays the exporter order's bound without in-place Concats.
  c.memory_plan->order = base.order;
  c.memory_plan->exporter_order_bound_bytes = base.exporter_order_bound_bytes;
  if (c.memory_plan->arena_bytes > base.arena_bytes) return m;
  c.core_schedules = compiledCoreSchedules(c, tiling_cache);
  if (!noSlower(c, m, tiling_cache)) return m;
  return c;
}

// The node order, then the in-place Concats on it.
CompiledModel compileChoosing(std::shared_ptr<const Graph> graph, PartitionReport placement,
                              const quant::QuantPlan* plan, const SocProfile& soc,
                              const CompileOptions& options, perf::TilingCache* tiling_cache) {
  // A plan in the exporter's order is its own reference (memory_plan.order "exporter", both
  // bounds equal: planNpuMemory's defaults).
  CompiledModel m =
      options.node_order == NodeOrder::Exporter
          ? compileInOrder(std::move(graph), std::move(placement), plan, soc, options, tiling_cache)
          : compileMemoryAware(std::move(graph), std::move(placement), plan, soc, options, tiling_cache);
  return options.concat_in_place ? withConcatsInPlace(std::move(m), tiling_cache) : m;
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
  PartitionReport placement = partitionGraph(*graph, soc, options.op_target);
  // The node order is decided before lowering, so the program's tasks, the memory plan, the blob's
  // graph and every report follow the one order.
  return compileChoosing(std::move(graph), std::move(placement), plan, soc, options, tiling_cache);
}

}  // namespace npuc
