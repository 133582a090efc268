#include "runtime/memory_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace npuc {

namespace {

bool rangesIntersect(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

struct Placed {
  size_t offset;
  size_t bytes;
};

// Lowest-waste offset for a buffer of `bytes` among `busy` (blocks live at the same time),
// sorted by offset: the smallest gap that holds it, else the top of the highest block.
size_t bestFitOffset(std::vector<Placed>& busy, size_t bytes) {
  std::sort(busy.begin(), busy.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
  size_t best_offset = 0;
  size_t best_gap = std::numeric_limits<size_t>::max();
  size_t cursor = 0;  // end of the blocks seen so far (they may overlap each other)
  for (const Placed& p : busy) {
    if (p.offset > cursor) {
      const size_t gap = p.offset - cursor;
      if (gap >= bytes && gap < best_gap) {
        best_gap = gap;
        best_offset = cursor;
      }
    }
    cursor = std::max(cursor, p.offset + p.bytes);
  }
  return best_gap == std::numeric_limits<size_t>::max() ? cursor : best_offset;
}

}  // namespace

size_t liveBytesLowerBound(const std::vector<BufferRequest>& requests, size_t alignment) {
  // Sweep over range endpoints: +size at first, -size after last.
  std::map<int64_t, int64_t> delta;
  for (const BufferRequest& r : requests) {
    const auto bytes = static_cast<int64_t>(alignUp(r.bytes, alignment));
    delta[r.first] += bytes;
    delta[r.last + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

MemoryPlan placeInOrder(const std::vector<BufferRequest>& requests, size_t alignment,
                        const std::vector<size_t>& order) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> placed;  // indices already placed
  std::vector<Placed> busy;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t bytes = alignUp(r.bytes, alignment);
    if (bytes == 0) continue;  // empty tensors need no storage; offset 0 is as good as any
    busy.clear();
    for (size_t p : placed) {
      if (rangesIntersect(r, requests[p]))
        busy.push_back({plan.offsets[p], alignUp(requests[p].bytes, alignment)});
    }
    plan.offsets[idx] = bestFitOffset(busy, bytes);
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[idx] + bytes);
    placed.push_back(idx);
  }
  return plan;
}

MemoryPlan planMemory(const std::vector<BufferRequest>& requests, size_t alignment) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by earlier definition, then by index, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });
  MemoryPlan plan = placeInOrder(requests, alignment, order);
  plan.lower_bound_bytes = liveBytesLowerBound(requests, alignment);
  return plan;
}

}  // namespace npuc
