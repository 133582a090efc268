#include "memory/npu_memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include "memory/arena_placement.h"
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
         bytes == o.bytes && first == o.first && last == o.last && offset == o.offset;
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
              const PartitionReport& placement)
      : graph_(graph),
        quant_plan_(quant_plan),
        soc_(soc),
        placement_(placement),
        schedule_(scheduleTasks(graph, soc, placement)) {}

  NpuMemoryPlan build() {
    collectBuffers();
    place();
    return std::move(plan_);
  }

  // The buffers with their sizes and live ranges, not yet placed (every offset 0).
  std::vector<PlannedBuffer> unplacedBuffers() {
    collectBuffers();
    return std::move(plan_.buffers);
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

  void place() {
    std::vector<BufferRequest> requests;
    std::vector<size_t> index;  // request -> buffer
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const PlannedBuffer& b = plan_.buffers[i];
      if (b.home != BufferHome::Arena) continue;
      requests.push_back({b.bytes, b.first, b.last});
      index.push_back(i);
    }
    const ArenaPlacement placed = placeArena(requests, plan_.alignment);
    for (size_t r = 0; r < requests.size(); ++r) plan_.buffers[index[r]].offset = placed.offsets[r];
    plan_.arena_bytes = placed.arena_bytes;
    plan_.lower_bound_bytes = placed.lower_bound_bytes;
    plan_.strategy = placed.strategy;
    plan_.exporter_order_bound_bytes = placed.lower_bound_bytes;
  }

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
  return fmt::format("'{}' ({}, {} bytes at {}, steps {}..{})", b.value, bufferFormatName(b.format), b.bytes,
                     b.offset, b.first, b.last);
}

}  // namespace

NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                            const PartitionReport& placement) {
  return PlanBuilder(graph, quant_plan, soc, placement).build();
}

NpuMemoryPlan planNpuMemory(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc) {
  const PartitionReport placement = partitionGraph(graph, soc);
  return planNpuMemory(graph, quant_plan, soc, placement);
}

std::string findPlanMismatch(const NpuMemoryPlan& plan, const Graph& graph,
                             const quant::QuantPlan* quant_plan, const SocProfile& soc,
                             const PartitionReport& placement) {
  std::vector<PlannedBuffer> expected = PlanBuilder(graph, quant_plan, soc, placement).unplacedBuffers();
  if (expected.size() != plan.buffers.size()) {
    return fmt::format("it has {} buffers, the partition needs {}", plan.buffers.size(), expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    PlannedBuffer stored = plan.buffers[i];
    stored.offset = 0;  // any sound placement will do: findPlanViolation checks the offsets
    if (!(stored == expected[i])) {
      expected[i].offset = plan.buffers[i].offset;
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
    if (b.home != BufferHome::Arena) {
      if (b.offset != 0) return "I/O buffer " + describe(b) + " has an arena offset";
      continue;
    }
    if (b.bytes > plan.arena_bytes || b.offset > plan.arena_bytes - b.bytes)
      return fmt::format("buffer {} ends past the arena ({} bytes)", describe(b), plan.arena_bytes);
    arena.push_back(&b);
    live.push_back({b.bytes, b.first, b.last});
  }
  const size_t bound = liveBytesLowerBound(live, plan.alignment);
  if (bound != plan.lower_bound_bytes) {
    return fmt::format("lower bound {} does not match its buffers ({})", plan.lower_bound_bytes, bound);
  }
  return findLiveOverlap(arena);
}

}  // namespace npuc::memory
