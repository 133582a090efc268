#include "memory/arena_placement.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

namespace npuc::memory {

namespace {

using Less = std::function<bool(const BufferRequest&, const BufferRequest&)>;

int64_t lifetime(const BufferRequest& r) {
  return r.last - r.first + 1;
}

// The seed orders: each a different guess at which buffers constrain the arena most.
std::vector<std::pair<std::string, Less>> seedOrders() {
  return {
      {"size", [](const BufferRequest& a, const BufferRequest& b) { return a.bytes > b.bytes; }},
      {"area",  // bytes x lifetime: big and long-lived buffers first
       [](const BufferRequest& a, const BufferRequest& b) {
         return static_cast<double>(a.bytes) * lifetime(a) > static_cast<double>(b.bytes) * lifetime(b);
       }},
      {"lifetime",
       [](const BufferRequest& a, const BufferRequest& b) {
         return lifetime(a) != lifetime(b) ? lifetime(a) > lifetime(b) : a.bytes > b.bytes;
       }},
      {"definition",  // in execution order: the classic stack-like allocation
       [](const BufferRequest& a, const BufferRequest& b) {
         return a.first != b.first ? a.first < b.first : a.bytes > b.bytes;
       }},
  };
}

std::vector<size_t> sortedOrder(const std::vector<BufferRequest>& requests, const Less& less) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable, ties by index: identical requests always give the identical plan.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return less(requests[a], requests[b]); });
  return order;
}

// The buffers live at a step where the placement reaches its arena size: moving one of them
// earlier in the order is what can lower the peak.
std::vector<size_t> buffersAtPeak(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  std::vector<size_t> out;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].bytes && plan.offsets[i] + requests[i].bytes == plan.arena_bytes) out.push_back(i);
  std::vector<size_t> live;
  for (size_t top : out) {
    for (size_t i = 0; i < requests.size(); ++i) {
      const bool overlaps =
          requests[i].first <= requests[top].last && requests[top].first <= requests[i].last;
      if (overlaps && requests[i].bytes) live.push_back(i);
    }
  }
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  return live;
}

}  // namespace

ArenaPlacement placeArena(const std::vector<BufferRequest>& requests, size_t alignment,
                          const ArenaSearchOptions& options) {
  ArenaPlacement best;
  best.lower_bound_bytes = liveBytesLowerBound(requests, alignment);
  std::vector<size_t> best_order;
  bool first = true;
  for (const auto& [name, less] : seedOrders()) {
    std::vector<size_t> order = sortedOrder(requests, less);
    MemoryPlan plan = placeInOrder(requests, alignment, order);
    if (first || plan.arena_bytes < best.arena_bytes) {
      best.offsets = std::move(plan.offsets);
      best.arena_bytes = plan.arena_bytes;
      best.strategy = name;
      best_order = std::move(order);
      first = false;
    }
  }
  const auto good_enough = [&](size_t arena) {
    return static_cast<double>(arena) <=
           options.good_enough_ratio * static_cast<double>(best.lower_bound_bytes);
  };
  const uint64_t n = requests.size();
  const uint64_t checks_per_try = std::max<uint64_t>(1, n * n / 2);
  const uint64_t tries = std::min<uint64_t>(static_cast<uint64_t>(std::max(0, options.climb_iterations)),
                                            options.max_pair_checks / checks_per_try);
  // Hill climb on the order: move a buffer live at the peak to an earlier position (it then
  // gets first pick of the low offsets) and keep the move when the arena does not grow. Equal
  // arenas are accepted so the climb can cross plateaus. A fixed seed keeps plans reproducible.
  std::mt19937 rng(0x6d706c6e);  // "mpln"
  MemoryPlan current{best.offsets, best.arena_bytes, 0};
  std::vector<size_t> order = best_order;
  for (uint64_t t = 0; t < tries && n > 1 && !good_enough(best.arena_bytes); ++t) {
    const std::vector<size_t> peak = buffersAtPeak(requests, current);
    if (peak.empty()) break;
    const size_t pick = peak[rng() % peak.size()];
    const size_t from = static_cast<size_t>(std::find(order.begin(), order.end(), pick) - order.begin());
    if (from == 0) continue;
    const size_t to = rng() % from;
    std::vector<size_t> candidate = order;
    candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(from));
    candidate.insert(candidate.begin() + static_cast<std::ptrdiff_t>(to), pick);
    MemoryPlan plan = placeInOrder(requests, alignment, candidate);
    if (plan.arena_bytes > current.arena_bytes) continue;
    order = std::move(candidate);
    current = std::move(plan);
    if (current.arena_bytes < best.arena_bytes) {
      best.offsets = current.offsets;
      best.arena_bytes = current.arena_bytes;
      if (best.strategy.find("+climb") == std::string::npos) best.strategy += "+climb";
    }
  }
  return best;
}

}  // namespace npuc::memory
