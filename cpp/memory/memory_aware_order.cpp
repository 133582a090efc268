#include "memory/memory_aware_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "memory/npu_buffer_sizes.h"
#include "memory/npu_memory_plan.h"
#include "runtime/memory_planner.h"
#include "target/fusion_groups.h"

namespace npuc::memory {

namespace {

// Most down-sets the exact search visits (each a bitset of the steps): a few MB at most.
constexpr size_t kMaxExactStates = 200'000;

// One arena buffer as planNpuMemory makes it: written by `producer` (-1: a graph input's converted
// copy, live from the first step) and read by the steps in `readers` (distinct); it lives from its
// producer to its last reader (its producer alone when nobody reads it).
struct StepBuffer {
  uint64_t bytes = 0;
  int producer = -1;
  std::vector<int> readers;
};

// The graph as a DAG of steps. Step ids follow the exporter order (a step sits at its last
// member's position, as in the memory plan), so the exporter order is 0, 1, ..., n-1.
struct StepGraph {
  std::vector<std::vector<const Node*>> members;
  std::vector<Device> device;
  std::vector<std::vector<int>> preds, succs;
  std::vector<StepBuffer> buffers;
  std::vector<std::vector<int>> writes, reads;  // buffer ids per step
  std::unordered_map<const Node*, int> step_of;
  size_t size() const { return members.size(); }
};

Device otherDevice(Device d) {
  return d == Device::Npu ? Device::Cpu : Device::Npu;
}

BufferFormat formatOn(Device d) {
  return d == Device::Npu ? BufferFormat::Npu : BufferFormat::Host;
}

StepGraph buildSteps(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                     const PartitionReport& placement) {
  StepGraph s;
  std::unordered_map<const Node*, size_t> position;
  for (const Node* n : graph.nodes()) position.emplace(n, position.size());
  std::set<const Value*> fused_internal;
  std::unordered_map<const Node*, const FusionGroup*> group_of;
  const std::vector<FusionGroup> groups = fusionGroups(graph, soc, placement);
  for (const FusionGroup& g : groups) {
    const std::vector<const Node*> m = g.nodes();
    for (const Node* n : m) group_of[n] = &g;
    for (size_t i = 0; i + 1 < m.size(); ++i)
      for (const Value* v : m[i]->outputs()) fused_internal.insert(v);
  }
  // A step is created at its last member, so step ids are in exporter order.
  for (const Node* n : graph.nodes()) {
    auto g = group_of.find(n);
    std::vector<const Node*> m = g == group_of.end() ? std::vector<const Node*>{n} : g->second->nodes();
    if (m.back() != n) continue;
    const int id = static_cast<int>(s.members.size());
    for (const Node* x : m) s.step_of[x] = id;
    s.device.push_back(placement.deviceOf(n));
    s.members.push_back(std::move(m));
  }
  const size_t n = s.members.size();
  s.preds.assign(n, {});
  s.succs.assign(n, {});
  s.writes.assign(n, {});
  s.reads.assign(n, {});
  for (size_t id = 0; id < n; ++id) {
    std::set<int> preds;
    for (const Node* m : s.members[id])
      for (const Value* v : m->inputs())
        if (v && v->producer()) {
          const int p = s.step_of.at(v->producer());
          if (p != static_cast<int>(id)) preds.insert(p);
        }
    s.preds[id].assign(preds.begin(), preds.end());
    for (int p : preds) s.succs[p].push_back(static_cast<int>(id));
  }

  auto addBuffer = [&](const Value& v, BufferFormat format, int producer, std::set<int> readers) {
    const uint64_t raw = activationBytes(v, format, quant_plan, soc);
    if (raw == 0) return;
    StepBuffer b;
    b.bytes = alignUp(raw, kArenaAlignment);
    b.producer = producer;
    readers.erase(producer);  // a step never reads its own output from the arena
    b.readers.assign(readers.begin(), readers.end());
    const int id = static_cast<int>(s.buffers.size());
    if (producer >= 0) s.writes[producer].push_back(id);
    for (int r : b.readers) s.reads[r].push_back(id);
    s.buffers.push_back(std::move(b));
  };
  // The same buffers as the memory plan's PlanBuilder, keeping only those in the arena.
  auto addValue = [&](const Value& v, int producer, Device home) {
    if (v.isConstant()) return;
    std::set<int> home_readers, other_readers;
    for (const Use& u : v.uses()) {
      const int at = s.step_of.at(u.user);
      (placement.deviceOf(u.user) == home ? home_readers : other_readers).insert(at);
    }
    if (!v.isGraphInput() && !v.isGraphOutput()) addBuffer(v, formatOn(home), producer, home_readers);
    if (!other_readers.empty()) addBuffer(v, formatOn(otherDevice(home)), producer, other_readers);
  };
  for (const Value* v : graph.inputs()) {
    Device home = v->uses().empty() ? Device::Npu : Device::Cpu;
    for (const Use& u : v->uses())
      if (placement.deviceOf(u.user) == Device::Npu) home = Device::Npu;
    addValue(*v, -1, home);
  }
  for (const Node* node : graph.nodes())
    for (const Value* v : node->outputs())
      if (v && !fused_internal.count(v)) addValue(*v, s.step_of.at(node), placement.deviceOf(node));
  return s;
}

// Max over positions of the live arena bytes when the steps run in `order` (step ids).
uint64_t boundOf(const StepGraph& s, const std::vector<int>& order) {
  std::vector<int> pos(s.size());
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);
  std::vector<int64_t> delta(s.size() + 1, 0);
  for (const StepBuffer& b : s.buffers) {
    const int first = b.producer < 0 ? 0 : pos[b.producer];
    int last = first;
    for (int r : b.readers) last = std::max(last, pos[r]);
    delta[first] += static_cast<int64_t>(b.bytes);
    delta[last + 1] -= static_cast<int64_t>(b.bytes);
  }
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < s.size(); ++i) peak = std::max(peak, live += delta[i]);
  return static_cast<uint64_t>(peak);
}

size_t switchesOf(const StepGraph& s, const std::vector<int>& order) {
  size_t n = 0;
  for (size_t i = 1; i < order.size(); ++i) n += s.device[order[i]] != s.device[order[i - 1]];
  return n;
}

// List scheduling over the ready set: run the step after which the fewest arena bytes stay live
// (ties: the smaller peak while it runs, then the exporter order). `sticky`: first prefer a step on
// the device that ran last, so branches on one device are not interleaved with the other's.
std::vector<int> greedyOrder(const StepGraph& s, bool sticky) {
  const size_t n = s.size();
  std::vector<int> waiting(n), unread(s.buffers.size());
  for (size_t i = 0; i < n; ++i) waiting[i] = static_cast<int>(s.preds[i].size());
  int64_t live = 0;
  for (size_t b = 0; b < s.buffers.size(); ++b) {
    unread[b] = static_cast<int>(s.buffers[b].readers.size());
    if (s.buffers[b].producer < 0) live += static_cast<int64_t>(s.buffers[b].bytes);
  }
  std::set<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (!waiting[i]) ready.insert(static_cast<int>(i));
  std::vector<int> order;
  order.reserve(n);
  Device last_device = n ? s.device[0] : Device::Npu;
  while (!ready.empty()) {
    int best = -1;
    std::tuple<bool, int64_t, int64_t> best_key{};
    for (int c : ready) {
      int64_t alloc = 0, freed = 0;
      for (int b : s.writes[c]) {
        alloc += static_cast<int64_t>(s.buffers[b].bytes);
        if (s.buffers[b].readers.empty()) freed += static_cast<int64_t>(s.buffers[b].bytes);
      }
      for (int b : s.reads[c])
        if (unread[b] == 1) freed += static_cast<int64_t>(s.buffers[b].bytes);
      const std::tuple<bool, int64_t, int64_t> key{sticky && s.device[c] != last_device, alloc - freed,
                                                   alloc};
      if (best < 0 || key < best_key)
        best = c, best_key = key;  // `ready` is ascending: ties keep exporter order
    }
    ready.erase(best);
    order.push_back(best);
    last_device = s.device[best];
    for (int b : s.writes[best]) live += static_cast<int64_t>(s.buffers[b].bytes);
    for (int b : s.reads[best])
      if (--unread[b] == 0) live -= static_cast<int64_t>(s.buffers[b].bytes);
    for (int q : s.succs[best])
      if (--waiting[q] == 0) ready.insert(q);
  }
  return order;
}

// Branch-at-a-time (Sethi-Ullman, generalized to a DAG): need[i] estimates the memory to compute
// step i from scratch; a step's input branches run one after the other, the one with the largest
// need - (bytes it leaves behind) first, so the small results wait while the big branch runs.
// Shared ancestors are counted in every branch: an estimate that only ranks branches; the real
// bound of the resulting order is measured afterwards. Sinks start in exporter order, or largest
// need first with `sinks_by_need`.
std::vector<int> branchOrder(const StepGraph& s, bool sinks_by_need) {
  const size_t n = s.size();
  std::vector<int64_t> need(n, 0), out(n, 0), alloc(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (int b : s.writes[i]) {
      alloc[i] += static_cast<int64_t>(s.buffers[b].bytes);
      if (!s.buffers[b].readers.empty()) out[i] += static_cast<int64_t>(s.buffers[b].bytes);
    }
  std::vector<std::vector<int>> branches(n);
  auto first = [&](int a, int b) {  // larger need - out runs first; ties: exporter order
    const int64_t ka = need[a] - out[a], kb = need[b] - out[b];
    return ka != kb ? ka > kb : a < b;
  };
  for (size_t i = 0; i < n; ++i) {  // ids are topological: every pred's need is known
    branches[i] = s.preds[i];
    std::sort(branches[i].begin(), branches[i].end(), first);
    int64_t held = 0, peak = 0;
    for (int p : branches[i]) {
      peak = std::max(peak, held + need[p]);
      held += out[p];
    }
    need[i] = std::max(peak, held + alloc[i]);
  }
  std::vector<int> sinks;
  for (size_t i = 0; i < n; ++i)
    if (s.succs[i].empty()) sinks.push_back(static_cast<int>(i));
  if (sinks_by_need)
    std::stable_sort(sinks.begin(), sinks.end(), [&](int a, int b) { return need[a] > need[b]; });
  std::vector<int> order;
  order.reserve(n);
  std::vector<char> done(n, 0);
  // Depth-first post-order with an explicit stack: graphs can be thousands of steps deep.
  for (int root : sinks) {
    if (done[root]) continue;
    std::vector<std::pair<int, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [step, next] = stack.back();
      if (next < branches[step].size()) {
        const int p = branches[step][next++];
        if (!done[p]) stack.emplace_back(p, 0);
        continue;
      }
      if (!done[step]) {
        done[step] = 1;
        order.push_back(step);
      }
      stack.pop_back();
    }
  }
  return order;
}

// The exact minimum-peak order, by dynamic programming over the sets of steps already run
// (Liberis & Lane): with D run, live(D) = the bytes written in D (or graph-input copies) that a
// step outside D still reads; running s next peaks at live(D) + the bytes s writes. So the best
// peak to reach D + {s} is min over (D, s) of max(best(D), that). The states are the DAG's
// down-sets: n + 1 for a chain, exponentially many for wide graphs, so the search gives up
// (returns nothing) past `max_states`. Ties keep the first order found, steps tried ascending.
std::vector<int> exactOrder(const StepGraph& s, size_t max_states) {
  const size_t n = s.size(), words = (n + 63) / 64;
  using Set = std::vector<uint64_t>;
  struct SetHash {
    size_t operator()(const Set& v) const {
      size_t h = 1469598103934665603ull;
      for (uint64_t w : v) h = (h ^ w) * 1099511628211ull;
      return h;
    }
  };
  struct State {
    Set done;
    int64_t live = 0;  // bytes live once `done` has run
    int64_t peak = 0;  // best peak reaching it
    int prev = -1, step = -1;
  };
  auto has = [](const Set& d, int i) { return (d[i / 64] >> (i % 64)) & 1u; };
  std::vector<State> states;
  State start;
  start.done.assign(words, 0);
  for (const StepBuffer& b : s.buffers)
    if (b.producer < 0 && !b.readers.empty()) start.live += static_cast<int64_t>(b.bytes);
  states.push_back(start);
  std::vector<int> layer{0};
  for (size_t k = 0; k < n; ++k) {
    std::unordered_map<Set, int, SetHash> next_index;
    std::vector<int> next;
    for (int from : layer) {
      for (size_t c = 0; c < n; ++c) {
        const int step = static_cast<int>(c);
        if (has(states[from].done, step)) continue;
        bool ready = true;
        for (int p : s.preds[c]) ready = ready && has(states[from].done, p);
        if (!ready) continue;
        int64_t written = 0, freed = 0;
        for (int b : s.writes[c]) {
          written += static_cast<int64_t>(s.buffers[b].bytes);
          if (s.buffers[b].readers.empty()) freed += static_cast<int64_t>(s.buffers[b].bytes);
        }
        for (int b : s.reads[c]) {
          bool last = true;  // every other reader has run
          for (int r : s.buffers[b].readers) last = last && (r == step || has(states[from].done, r));
          if (last) freed += static_cast<int64_t>(s.buffers[b].bytes);
        }
        const int64_t peak = std::max(states[from].peak, states[from].live + written);
        Set done = states[from].done;
        done[c / 64] |= uint64_t{1} << (c % 64);
        auto [it, fresh] = next_index.emplace(done, static_cast<int>(states.size()));
        if (fresh) {
          if (states.size() >= max_states) return {};
          State st;
          st.done = std::move(done);
          st.live = states[from].live + written - freed;
          st.peak = peak;
          st.prev = from;
          st.step = step;
          states.push_back(std::move(st));
          next.push_back(it->second);
        } else if (peak < states[it->second].peak) {
          states[it->second].peak = peak;
          states[it->second].prev = from;
          states[it->second].step = step;
        }
      }
    }
    layer = std::move(next);
  }
  std::vector<int> order;
  for (int at = layer.empty() ? -1 : layer.front(); at > 0; at = states[at].prev)
    order.push_back(states[at].step);
  std::reverse(order.begin(), order.end());
  return order.size() == n ? order : std::vector<int>{};
}

// The nodes of the steps in `order`, each fused group contiguous.
std::vector<const Node*> nodesOf(const StepGraph& s, const std::vector<int>& order) {
  std::vector<const Node*> nodes;
  for (int id : order) nodes.insert(nodes.end(), s.members[id].begin(), s.members[id].end());
  return nodes;
}

// The node list that runs the steps in `order` with each fused group's members other than the last
// written as early as their inputs allow. The group still runs at its last member (the memory plan
// and the task grouping both put it there), so the bound is the same; but fusionGroups() gives a
// residual Add to the first anchor in node order that can take it, and with the group contiguous
// a competing anchor (a downsample Conv feeding the same Add) can come first and take it instead.
std::vector<const Node*> emitNodes(const Graph& graph, const StepGraph& s, const std::vector<int>& order) {
  std::vector<const Node*> pending;  // non-last members, in exporter order
  for (const Node* n : graph.nodes())
    if (s.members[s.step_of.at(n)].back() != n) pending.push_back(n);
  std::set<const Node*> emitted;
  std::vector<const Node*> nodes;
  auto ready = [&](const Node* n) {
    for (const Value* v : n->inputs())
      if (v && v->producer() && !emitted.count(v->producer())) return false;
    return true;
  };
  auto emit = [&](const Node* n) {
    nodes.push_back(n);
    emitted.insert(n);
  };
  auto flush = [&] {  // until no pending member becomes ready (an activation waits for its anchor)
    for (bool more = true; more;) {
      more = false;
      for (auto it = pending.begin(); it != pending.end();) {
        if (ready(*it)) {
          emit(*it);
          it = pending.erase(it);
          more = true;
        } else {
          ++it;
        }
      }
    }
  };
  flush();
  for (int id : order) {
    const Node* last = s.members[id].back();
    for (const Node* m : s.members[id])  // normally flushed already; kept in case an input was late
      if (m != last && !emitted.count(m)) {
        emit(m);
        pending.erase(std::find(pending.begin(), pending.end(), m));
      }
    emit(last);
    flush();
  }
  return nodes;
}

// `nodes` as step ids, checking it is a topological permutation with contiguous fusion groups.
std::vector<int> stepsOf(const StepGraph& s, const std::vector<const Node*>& nodes) {
  std::vector<int> order;
  std::vector<char> done(s.size(), 0);
  for (size_t i = 0; i < nodes.size();) {
    auto it = s.step_of.find(nodes[i]);
    if (it == s.step_of.end()) throw GraphError("memory order: a node is not part of the graph");
    const int id = it->second;
    if (done[id]) throw GraphError(fmt::format("memory order: node '{}' appears twice", nodes[i]->name()));
    for (const Node* m : s.members[id]) {
      if (i >= nodes.size() || nodes[i] != m)
        throw GraphError(fmt::format("memory order: fused group of '{}' is not contiguous", m->name()));
      ++i;
    }
    for (int p : s.preds[id])
      if (!done[p])
        throw GraphError(
            fmt::format("memory order: '{}' runs before an input's producer", s.members[id].front()->name()));
    done[id] = 1;
    order.push_back(id);
  }
  if (order.size() != s.size()) throw GraphError("memory order: not every node of the graph is ordered");
  return order;
}

// The largest bytes one step reads and writes: all live while it runs, in any order.
uint64_t stepOwnFloor(const StepGraph& s) {
  uint64_t floor = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    uint64_t own = 0;
    for (int b : s.writes[i]) own += s.buffers[b].bytes;
    for (int b : s.reads[i]) own += s.buffers[b].bytes;
    floor = std::max(floor, own);
  }
  return floor;
}

// A bound no topological order goes below: while step i runs, the buffers it reads and writes are
// live, and so is every buffer written by an ancestor of i (or a graph input's copy) and read by a
// descendant of i, whatever the order. Max over steps.
uint64_t orderFloor(const StepGraph& s) {
  const size_t n = s.size();
  std::vector<std::vector<char>> ancestor(n, std::vector<char>(n, 0));  // ancestor[i][a]: a runs before i
  for (size_t i = 0; i < n; ++i)                                        // ids are topological
    for (int p : s.preds[i]) {
      ancestor[i][p] = 1;
      for (size_t a = 0; a < n; ++a) ancestor[i][a] |= ancestor[p][a];
    }
  uint64_t floor = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t live = 0;
    for (const StepBuffer& b : s.buffers) {
      const bool touches =
          b.producer == static_cast<int>(i) ||
          std::find(b.readers.begin(), b.readers.end(), static_cast<int>(i)) != b.readers.end();
      bool across = false;
      if (!touches && (b.producer < 0 || ancestor[i][b.producer]))
        for (int r : b.readers) across |= ancestor[r][i] != 0;
      if (touches || across) live += b.bytes;
    }
    floor = std::max(floor, live);
  }
  return floor;
}

std::vector<const Node*> graphOrder(const Graph& graph) {
  std::vector<const Node*> out;
  for (const Node* n : graph.nodes()) out.push_back(n);
  return out;
}

}  // namespace

MemoryOrder chooseMemoryOrder(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                              const PartitionReport& placement) {
  const StepGraph s = buildSteps(graph, quant_plan, soc, placement);
  std::vector<int> exporter(s.size());
  for (size_t i = 0; i < s.size(); ++i) exporter[i] = static_cast<int>(i);
  std::vector<std::pair<std::string, std::vector<int>>> tried = {
      {"exporter", exporter},
      {"greedy-live", greedyOrder(s, false)},
      {"greedy-live-same-device", greedyOrder(s, true)},
      {"branch-first", branchOrder(s, false)},
      {"branch-first-largest-output", branchOrder(s, true)},
  };
  // The exact search, unless a candidate already sits at the one-step floor (the largest bytes
  // one step reads and writes: no order goes below it, as on most CNNs) or the graph is too wide.
  // Its cost is states x steps, so the state budget shrinks with the graph (about 2e7 step checks,
  // 0.1-0.25 s at worst on this machine).
  uint64_t best_heuristic = std::numeric_limits<uint64_t>::max();
  for (const auto& [name, order] : tried) best_heuristic = std::min(best_heuristic, boundOf(s, order));
  if (best_heuristic > stepOwnFloor(s)) {
    const size_t budget = std::min<size_t>(kMaxExactStates, 20'000'000 / std::max<size_t>(s.size(), 1));
    std::vector<int> exact = exactOrder(s, budget);
    if (!exact.empty()) tried.emplace_back("exact", std::move(exact));
  }
  MemoryOrder out;
  out.nodes = graphOrder(graph);
  const size_t exporter_switches = switchesOf(s, exporter);
  size_t best = 0;
  for (size_t i = 0; i < tried.size(); ++i) {
    OrderCandidate c;
    c.name = tried[i].first;
    c.bound_bytes = boundOf(s, tried[i].second);
    c.device_switches = switchesOf(s, tried[i].second);
    c.rejected = c.device_switches > exporter_switches;
    c.nodes = i == 0 ? out.nodes : nodesOf(s, tried[i].second);
    if (i > 0) c.anchors_early = emitNodes(graph, s, tried[i].second);
    // Strictly lower only: the exporter order (first) wins ties, so an equal bound changes nothing.
    if (i > 0 && !c.rejected && c.bound_bytes < out.candidates[best].bound_bytes) best = i;
    out.candidates.push_back(std::move(c));
  }
  out.exporter_bound_bytes = out.candidates[0].bound_bytes;
  out.bound_bytes = out.candidates[best].bound_bytes;
  out.name = out.candidates[best].name;
  out.nodes = out.candidates[best].nodes;
  return out;
}

uint64_t orderLowerBound(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                         const PartitionReport& placement, const std::vector<const Node*>& order) {
  const StepGraph s = buildSteps(graph, quant_plan, soc, placement);
  std::vector<int> steps;  // a group runs at its last member, as the memory plan has it
  for (const Node* n : order) {
    auto it = s.step_of.find(n);
    if (it == s.step_of.end()) throw GraphError("memory order: a node is not part of the graph");
    if (s.members[it->second].back() == n) steps.push_back(it->second);
  }
  return boundOf(s, stepsOf(s, nodesOf(s, steps)));
}

uint64_t orderFloorBytes(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                         const PartitionReport& placement) {
  return orderFloor(buildSteps(graph, quant_plan, soc, placement));
}

size_t deviceSwitches(const PartitionReport& placement, const std::vector<const Node*>& order) {
  size_t n = 0;
  for (size_t i = 1; i < order.size(); ++i)
    n += placement.deviceOf(order[i]) != placement.deviceOf(order[i - 1]);
  return n;
}

std::unique_ptr<Graph> reorderedCopy(const Graph& graph, const std::vector<const Node*>& order) {
  std::unordered_map<const Node*, size_t> index;
  for (const Node* n : graph.nodes()) index.emplace(n, index.size());
  if (order.size() != index.size())
    throw GraphError(
        fmt::format("memory order: {} nodes ordered, the graph has {}", order.size(), index.size()));
  std::unique_ptr<Graph> copy = graph.clone();
  const std::vector<Node*> nodes = copy->nodeList();  // clone() keeps the node list's order
  Node* prev = nullptr;
  std::vector<char> placed(nodes.size(), 0);
  for (const Node* n : order) {
    auto it = index.find(n);
    if (it == index.end() || placed[it->second])
      throw GraphError("memory order: the order is not a permutation of the graph's nodes");
    placed[it->second] = 1;
    Node* c = nodes[it->second];
    if (prev)
      c->moveAfter(prev);
    else
      c->moveBefore(copy->firstNode());
    prev = c;
  }
  copy->renumber();
  for (const Node* n : copy->nodes())
    for (const Value* v : n->inputs())
      if (v && v->producer() && v->producer()->order() >= n->order())
        throw GraphError(
            fmt::format("memory order: '{}' runs before the producer of '{}'", n->name(), v->name()));
  return copy;
}

}  // namespace npuc::memory
