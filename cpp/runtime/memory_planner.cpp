#include "runtime/memory_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace npuc {

namespace {

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

// The placed buffers, indexed by live range so "which of them are live during [first, last]" costs
// O((answers + 1) log n) instead of a scan of every placed buffer (which made placement quadratic
// in the buffer count): a max-tree over the requests sorted by `first`, holding each placed
// request's `last` (unplaced ones hold the lowest value and are never reported).
class PlacedByLiveRange {
 public:
  explicit PlacedByLiveRange(const std::vector<BufferRequest>& requests) : requests_(requests) {
    by_first_.resize(requests.size());
    std::iota(by_first_.begin(), by_first_.end(), 0);
    std::stable_sort(by_first_.begin(), by_first_.end(),
                     [&](size_t a, size_t b) { return requests[a].first < requests[b].first; });
    slot_of_.resize(requests.size());
    for (size_t s = 0; s < by_first_.size(); ++s) slot_of_[by_first_[s]] = s;
    while (leaves_ < requests.size()) leaves_ *= 2;
    max_last_.assign(2 * leaves_, kNone);
  }

  void place(size_t idx) {
    size_t node = leaves_ + slot_of_[idx];
    max_last_[node] = requests_[idx].last;
    for (node /= 2; node >= 1; node /= 2)
      max_last_[node] = std::max(max_last_[2 * node], max_last_[2 * node + 1]);
  }

  // Calls f(idx) for every placed request whose live range intersects [first, last].
  template <typename F>
  void forEachLiveDuring(int64_t first, int64_t last, F f) const {
    // Candidates start no later than `last`: a prefix of by_first_.
    const size_t end =
        static_cast<size_t>(std::upper_bound(by_first_.begin(), by_first_.end(), last,
                                             [&](int64_t v, size_t i) { return v < requests_[i].first; }) -
                            by_first_.begin());
    visit(1, 0, leaves_, end, first, f);
  }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

  template <typename F>
  void visit(size_t node, size_t lo, size_t hi, size_t end, int64_t first, F& f) const {
    if (lo >= end || max_last_[node] < first) return;  // outside the prefix, or nothing live that late
    if (hi - lo == 1) {
      f(by_first_[lo]);
      return;
    }
    const size_t mid = (lo + hi) / 2;
    visit(2 * node, lo, mid, end, first, f);
    visit(2 * node + 1, mid, hi, end, first, f);
  }

  const std::vector<BufferRequest>& requests_;
  std::vector<size_t> by_first_;  // request indices sorted by first
  std::vector<size_t> slot_of_;   // request index -> position in by_first_
  size_t leaves_ = 1;
  std::vector<int64_t> max_last_;  // 1-based max-tree over by_first_
};

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
  PlacedByLiveRange placed(requests);
  std::vector<Placed> busy;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t bytes = alignUp(r.bytes, alignment);
    if (bytes == 0) continue;  // empty tensors need no storage; offset 0 is as good as any
    busy.clear();
    placed.forEachLiveDuring(r.first, r.last, [&](size_t p) {
      busy.push_back({plan.offsets[p], alignUp(requests[p].bytes, alignment)});
    });
    plan.offsets[idx] = bestFitOffset(busy, bytes);
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[idx] + bytes);
    placed.place(idx);
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
