#include "memory/npu_memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include "common/error.h"
#include "memory/arena_placement.h"
#include "memory/concat_in_place.h"
#include "runtime/memory_planner.h"
#include "target/fusion_groups.h"

namespace npuc::memory {

const char* bufferHomeName(BufferHome h) {
  switch (h) {
    case BufferHome::Arena: return "arena";
    case BufferHome::Input: return "input";
    case BufferHome::Output: return "output";
  }
  return "?";
}

bool PlannedBuffer::operator==(const PlannedBuffer& o) const {
  return value == o.value && format == o.format && home == o.home && dtype == o.dtype && shape == o.shape &&
         bytes == o.bytes && first == o.first && last == o.last && offset == o.offset && within == o.within;
}

bool NpuMemoryPlan::operator==(const NpuMemoryPlan& o) const {
  return alignment == o.alignment && arena_bytes == o.arena_bytes &&
         lower_bound_bytes == o.lower_bound_bytes && strategy == o.strategy && order == o.order &&
         exporter_order_bound_bytes == o.exporter_order_bound_bytes && buffers == o.buffers;
}

uint64_t NpuMemoryPlan::ioBytes() const {
  uint64_t total = 0;
  for (const PlannedBuffer& b : buffers)
    if (b.home != BufferHome::Arena) total += b.bytes;
  return total;
}

double NpuMemoryPlan::ratio() const {
  return lower_bound_bytes == 0 ? 1.0
                                : static_cast<double>(arena_bytes) / static_cast<double>(lower_bound_bytes);
}

std::set<std::string> NpuMemoryPlan::containers() const {
  std::set<std::string> out;
  for (const PlannedBuffer& b : buffers)
    if (b.within >= 0 && static_cast<size_t>(b.within) < buffers.size())
      out.insert(buffers[static_cast<size_t>(b.within)].value);
  return out;
}

double NpuMemoryPlan::orderRatio() const {
  return exporter_order_bound_bytes == 0
             ? 1.0
             : static_cast<double>(lower_bound_bytes) / static_cast<double>(exporter_order_bound_bytes);
}

namespace {

Device other(Device d) {
  return d == Device::Npu ? Device::Cpu : Device::Npu;
}

BufferFormat formatOn(Device d) {
  return d == Device::Npu ? BufferFormat::Npu : BufferFormat::Host;
}

// The graph seen as the NPU runs it: the step of every node and the values that stay inside a
// fused task.
struct TaskSchedule {
  std::map<const Node*, int64_t> step;
  std::set<const Value*> fused_internal;
};

TaskSchedule scheduleTasks(const Graph& graph, const SocProfile& soc, const PartitionReport& placement) {
  TaskSchedule s;
  int64_t index = 0;
  for (const Node* n : graph.nodes()) s.step[n] = index++;
  for (const FusionGroup& g : fusionGroups(graph, soc, placement)) {
    const std::vector<const Node*> members = g.nodes();
    // The task runs once every input of every member exists: at its last member's position.
    const int64_t task_step = s.step.at(members.back());
    for (const Node* m : members) s.step[m] = task_step;
    for (size_t i = 0; i + 1 < members.size(); ++i)
      for (const Value* v : members[i]->outputs()) s.fused_internal.insert(v);
  }
  return s;
}

class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
              const PartitionReport& placement, const std::set<std::string>& in_place = {})
      : in_place_(in_place),
        graph_(graph),
        quant_plan_(quant_plan),
        soc_(soc),
        placement_(placement),
        schedule_(scheduleTasks(graph, soc, placement)) {}

  NpuMemoryPlan build() {
    collectBuffers();
    nestInPlaceConcats();
    place();
    return std::move(plan_);
  }

  // The buffers with their sizes and live ranges, not yet placed (every offset 0, a slice's its
  // offset in its container).
  std::vector<PlannedBuffer> unplacedBuffers() {
    collect();
    return std::move(plan_.buffers);
  }

  void collect() {
    collectBuffers();
    nestInPlaceConcats();
  }

  // Why the Concat writing `value` cannot be planned in place among the buffers collected (and
  // nested) so far, "" when it can; when it can, its inputs are nested into its buffer.
  std::string nestConcat(const std::string& value) {
    const Value* out = graph_.findValue(value);
    const Node* concat = out ? out->producer() : nullptr;
    if (!concat) return "'" + value + "' is no node's output";
    std::vector<uint64_t> offsets;
    std::string problem =
        concatInPlaceProblem(*concat, quant_plan_, soc_, placement_, plan_.alignment, &offsets);
    if (!problem.empty()) return problem;
    auto arenaNpuBuffer = [&](const std::string& name) -> PlannedBuffer* {
      for (PlannedBuffer& b : plan_.buffers)
        if (b.value == name && b.format == BufferFormat::Npu && b.home == BufferHome::Arena) return &b;
      return nullptr;
    };
    PlannedBuffer* container = arenaNpuBuffer(value);
    if (!container) return "its output has no NPU buffer in the arena (inside a fused task?)";
    if (container->within >= 0) return "its output is already inside another buffer";
    std::vector<PlannedBuffer*> slices;
    const std::vector<bool> rescaled = rescaledInputs(*concat, quant_plan_);
    const int64_t concat_step = container->first;
    for (size_t i = 0; i < concat->inputs().size(); ++i) {
      const Value* v = concat->inputs()[i];
      PlannedBuffer* b = arenaNpuBuffer(v->name());
      if (!b) return "input '" + v->name() + "' has no NPU buffer in the arena";
      if (b->within >= 0) return "input '" + v->name() + "' is already inside another buffer";
      if (rescaled[i] && b->last > concat_step)  // its slice is rescaled in place at the Concat
        return "input '" + v->name() + "' is requantized by the Concat and read after it";
      if (offsets[i] + b->bytes > container->bytes) return "input '" + v->name() + "' does not fit its slice";
      slices.push_back(b);
    }
    const auto index = static_cast<int64_t>(container - plan_.buffers.data());
    for (size_t i = 0; i < slices.size(); ++i) {
      slices[i]->within = index;
      slices[i]->offset = offsets[i];  // relative until place() adds the container's offset
      container->first = std::min(container->first, slices[i]->first);
      container->last = std::max(container->last, slices[i]->last);
    }
    return "";
  }

 private:
  void collectBuffers() {
    for (const Value* v : graph_.inputs()) addValue(*v, 0, homeOfInput(*v));
    for (const Node* n : graph_.nodes()) {
      const int64_t step = schedule_.step.at(n);
      for (const Value* v : n->outputs()) {
        if (!v || schedule_.fused_internal.count(v)) continue;
        addValue(*v, step, placement_.deviceOf(n));
      }
    }
  }

  // A graph input is stored as its readers need it: NPU format if any reader is on the NPU.
  Device homeOfInput(const Value& v) const {
    for (const Use& u : v.uses())
      if (placement_.deviceOf(u.user) == Device::Npu) return Device::Npu;
    return v.uses().empty() ? Device::Npu : Device::Cpu;
  }

  // The value's buffer on its producing device and, when read on the other device too, the
  // converted copy there.
  void addValue(const Value& v, int64_t produced_at, Device home) {
    if (v.isConstant()) return;
    int64_t last_home = produced_at, last_other = -1;
    for (const Use& u : v.uses()) {
      const int64_t at = schedule_.step.at(u.user);
      if (placement_.deviceOf(u.user) == home)
        last_home = std::max(last_home, at);
      else
        last_other = std::max(last_other, at);
    }
    const BufferHome where =
        v.isGraphInput() ? BufferHome::Input : (v.isGraphOutput() ? BufferHome::Output : BufferHome::Arena);
    addBuffer(v, formatOn(home), where, produced_at, last_home);
    if (last_other >= 0) addBuffer(v, formatOn(other(home)), BufferHome::Arena, produced_at, last_other);
  }

  void addBuffer(const Value& v, BufferFormat format, BufferHome home, int64_t first, int64_t last) {
    const uint64_t raw = activationBytes(v, format, quant_plan_, soc_);
    if (raw == 0) return;  // an empty tensor needs no storage
    PlannedBuffer b;
    b.value = v.name();
    b.format = format;
    b.home = home;
    b.dtype = format == BufferFormat::Npu ? npuStorageDType(v, quant_plan_) : v.dtype();
    b.shape = v.shape();
    b.bytes = alignUp(raw, plan_.alignment);
    b.first = first;
    b.last = last;
    plan_.buffers.push_back(std::move(b));
  }

  void nestInPlaceConcats() {
    for (const std::string& value : in_place_) {
      const std::string problem = nestConcat(value);
      if (!problem.empty())
        throw GraphError("memory plan: the Concat writing '" + value +
                         "' cannot be planned in place: " + problem);
    }
  }

  void place() {
    std::vector<BufferRequest> requests;
    std::vector<size_t> index;  // request -> buffer
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const PlannedBuffer& b = plan_.buffers[i];
      if (b.home != BufferHome::Arena || b.within >= 0) continue;
      requests.push_back({b.bytes, b.first, b.last});
      index.push_back(i);
    }
    const ArenaPlacement placed = placeArena(requests, plan_.alignment);
    for (size_t r = 0; r < requests.size(); ++r) plan_.buffers[index[r]].offset = placed.offsets[r];
    for (PlannedBuffer& b : plan_.buffers)  // a slice sits at its offset in its container
      if (b.within >= 0) b.offset += plan_.buffers[static_cast<size_t>(b.within)].offset;
    plan_.arena_bytes = placed.arena_bytes;
    plan_.lower_bound_bytes = placed.lower_bound_bytes;
    plan_.strategy = placed.strategy;
    plan_.exporter_order_bound_bytes = placed.lower_bound_bytes;
  }

  std::set<std::string> in_place_;
  const Graph& graph_;
  const quant::QuantPlan* quant_plan_;
  const SocProfile& soc_;
  const PartitionReport& placement_;
  TaskSchedule schedule_;
  NpuMemoryPlan plan_;
};

bool isPowerOfTwo(uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

std::string describe(const PlannedBuffer& b) {
  return fmt::format("'{}' ({}, {} bytes at {}{}, steps {}..{})", b.value, bufferFormatName(b.format),
                     b.bytes, b.offset, b.within >= 0 ? fmt::format(" within buffer {}", b.within) : "",
                     b.first, b.last);
}

// The lower bound of unplaced buffers: containers and other arena buffers, not the slices.
uint64_t boundOf(const std::vector<PlannedBuffer>& buffers, uint64_t alignment) {
  std::vector<BufferRequest> live;
  for (const PlannedBuffer& b : buffers)
    if (b.home == BufferHome::Arena && b.within < 0) live.push_back({b.bytes, b.first, b.last});
  return liveBytesLowerBound(live, alignment);
}

}  // namespace

NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                            const PartitionReport& placement, const std::set<std::string>& in_place) {
  return PlanBuilder(graph, quant_plan, soc, placement, in_place).build();
}

uint64_t plannedLowerBound(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                           const PartitionReport& placement, const std::set<std::string>& in_place) {
  return boundOf(PlanBuilder(graph, quant_plan, soc, placement, in_place).unplacedBuffers(), kArenaAlignment);
}

std::vector<std::string> inPlaceConcatCandidates(const Graph& graph, const quant::QuantPlan* quant_plan,
                                                 const SocProfile& soc, const PartitionReport& placement) {
  std::vector<std::string> out;
  for (const Node* n : graph.nodes()) {
    if (n->opType() != "Concat" || !n->output(0)) continue;
    PlanBuilder builder(graph, quant_plan, soc, placement);
    builder.collect();  // the buffers the Concat is checked against
    if (builder.nestConcat(n->output(0)->name()).empty()) out.push_back(n->output(0)->name());
  }
  return out;
}

NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc) {
  const PartitionReport placement = partitionGraph(graph, soc);
  return planNpuMemory(graph, quant_plan, soc, placement);
}

std::string findPlanMismatch(const NpuMemoryPlan& plan, const Graph& graph,
                             const quant::QuantPlan* quant_plan, const SocProfile& soc,
                             const PartitionReport& placement) {
  for (const PlannedBuffer& b : plan.buffers)
    if (b.within >= 0 && static_cast<size_t>(b.within) >= plan.buffers.size())
      return "buffer " + describe(b) + " is within no buffer of the plan";
  std::vector<PlannedBuffer> expected;
  try {
    expected = PlanBuilder(graph, quant_plan, soc, placement, plan.containers()).unplacedBuffers();
  } catch (const GraphError& e) {
    return e.what();
  }
  if (expected.size() != plan.buffers.size()) {
    return fmt::format("it has {} buffers, the partition needs {}", plan.buffers.size(), expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    PlannedBuffer stored = plan.buffers[i];
    // Any sound placement will do (findPlanViolation checks the offsets), but a slice must sit at
    // its channels' offset in its container.
    const uint64_t base = stored.within >= 0 ? plan.buffers[static_cast<size_t>(stored.within)].offset : 0;
    stored.offset = stored.within >= 0 && stored.offset >= base ? stored.offset - base
                    : stored.within >= 0                        ? ~uint64_t{0}
                                                                : 0;
    if (!(stored == expected[i])) {
      expected[i].offset = expected[i].within >= 0 ? base + expected[i].offset : plan.buffers[i].offset;
      return fmt::format("buffer {} is {}, the partition needs {}", i, describe(plan.buffers[i]),
                         describe(expected[i]));
    }
  }
  return "";
}

namespace {

// Two arena buffers live at the same step that share a byte, as "buffers A and B overlap", or "".
// A sweep over the steps (buffers in order of `first`, expired ones dropped by `last`): the buffers
// live at one step must be pairwise disjoint, so each newcomer is compared with its neighbours by
// offset only, O(n log n) where comparing every pair was quadratic in the buffer count. A buffer of
// zero bytes shares a byte with one that strictly contains its offset, as the pairwise rule had it.
std::string findLiveOverlap(std::vector<const PlannedBuffer*> arena) {
  std::stable_sort(arena.begin(), arena.end(),
                   [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->first < b->first; });
  std::map<uint64_t, const PlannedBuffer*> live;        // non-empty buffers live now, by offset (disjoint)
  std::multimap<uint64_t, const PlannedBuffer*> empty;  // zero-byte ones, by offset
  using Expiry = std::pair<int64_t, const PlannedBuffer*>;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiring;
  auto overlap = [](const PlannedBuffer& a, const PlannedBuffer& b) {
    return "buffers " + describe(a) + " and " + describe(b) + " overlap";
  };
  for (const PlannedBuffer* b : arena) {
    while (!expiring.empty() && expiring.top().first < b->first) {
      const PlannedBuffer* gone = expiring.top().second;
      expiring.pop();
      if (gone->bytes) {
        live.erase(gone->offset);
      } else {
        auto [lo, hi] = empty.equal_range(gone->offset);
        for (auto it = lo; it != hi; ++it)
          if (it->second == gone) {
            empty.erase(it);
            break;
          }
      }
    }
    const uint64_t end = b->offset + b->bytes;
    if (b->bytes) {
      auto next = live.lower_bound(b->offset);  // first live buffer starting at or after b
      if (next != live.end() && next->first < end) return overlap(*next->second, *b);
      if (next != live.begin() &&
          std::prev(next)->second->offset + std::prev(next)->second->bytes > b->offset)
        return overlap(*std::prev(next)->second, *b);
      auto inside = empty.upper_bound(b->offset);  // a zero-byte buffer strictly inside b
      if (inside != empty.end() && inside->first < end) return overlap(*inside->second, *b);
      live.emplace(b->offset, b);
    } else {
      auto holder = live.lower_bound(b->offset);  // the live buffer starting before b's offset
      if (holder != live.begin() &&
          std::prev(holder)->second->offset + std::prev(holder)->second->bytes > b->offset &&
          std::prev(holder)->first < b->offset)
        return overlap(*std::prev(holder)->second, *b);
      empty.emplace(b->offset, b);
    }
    expiring.push({b->last, b});
  }
  return "";
}

// A buffer planned within another must lie inside it, bytes and live range, and the container
// must be an arena buffer of the same format that is within none (no nesting).
std::string sliceViolation(const NpuMemoryPlan& plan, const PlannedBuffer& b) {
  if (static_cast<size_t>(b.within) >= plan.buffers.size())
    return "buffer " + describe(b) + " is within no buffer of the plan";
  const PlannedBuffer& c = plan.buffers[static_cast<size_t>(b.within)];
  if (&c == &b || c.within >= 0 || c.home != BufferHome::Arena || c.format != b.format)
    return "buffer " + describe(b) + " is within " + describe(c) + ", which cannot hold it";
  if (b.offset < c.offset || b.offset + b.bytes > c.offset + c.bytes)
    return "buffer " + describe(b) + " is not inside its container " + describe(c);
  if (b.first < c.first || b.last > c.last)
    return "buffer " + describe(b) + " is live outside its container " + describe(c);
  return "";
}

// Two slices of one container sharing a byte (they are live at once: the container's last reader
// reads them all).
std::string slicesOverlap(const NpuMemoryPlan& plan) {
  std::map<int64_t, std::vector<const PlannedBuffer*>> by_container;
  for (const PlannedBuffer& b : plan.buffers)
    if (b.within >= 0) by_container[b.within].push_back(&b);
  for (auto& [container, slices] : by_container) {
    std::sort(slices.begin(), slices.end(),
              [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < slices.size(); ++i)
      if (slices[i - 1]->offset + slices[i - 1]->bytes > slices[i]->offset)
        return "buffers " + describe(*slices[i - 1]) + " and " + describe(*slices[i]) + " overlap";
  }
  return "";
}

}  // namespace

std::string findPlanViolation(const NpuMemoryPlan& plan) {
  if (!isPowerOfTwo(plan.alignment)) return fmt::format("alignment {} is not a power of two", plan.alignment);
  if (plan.lower_bound_bytes > plan.arena_bytes) {
    return fmt::format("arena of {} bytes is below its lower bound {}", plan.arena_bytes,
                       plan.lower_bound_bytes);
  }
  std::vector<const PlannedBuffer*> arena;
  std::vector<BufferRequest> live;  // to recompute the lower bound the plan claims
  for (const PlannedBuffer& b : plan.buffers) {
    if (b.bytes % plan.alignment || b.offset % plan.alignment)
      return "buffer " + describe(b) + " is not aligned";
    if (b.first > b.last || b.first < 0 || b.last == std::numeric_limits<int64_t>::max())
      return "buffer " + describe(b) + " has an invalid live range";
    if (b.within < -1) return "buffer " + describe(b) + " is within no buffer of the plan";
    if (b.home != BufferHome::Arena) {
      if (b.offset != 0 || b.within >= 0) return "I/O buffer " + describe(b) + " has an arena offset";
      continue;
    }
    if (b.bytes > plan.arena_bytes || b.offset > plan.arena_bytes - b.bytes)
      return fmt::format("buffer {} ends past the arena ({} bytes)", describe(b), plan.arena_bytes);
    if (b.within >= 0) {
      if (std::string problem = sliceViolation(plan, b); !problem.empty()) return problem;
      continue;  // its bytes are its container's: checked there, counted there
    }
    arena.push_back(&b);
    live.push_back({b.bytes, b.first, b.last});
  }
  if (std::string problem = slicesOverlap(plan); !problem.empty()) return problem;
  const size_t bound = liveBytesLowerBound(live, plan.alignment);
  if (bound != plan.lower_bound_bytes) {
    return fmt::format("lower bound {} does not match its buffers ({})", plan.lower_bound_bytes, bound);
  }
  return findLiveOverlap(arena);
}

}  // namespace npuc::memory
