// Placement of arena buffers with a search on top of the runtime's best-fit core
// (runtime/memory_planner.h, placeInOrder): best fit depends on the order buffers are placed in,
// so several orders are tried and the best is improved by hill climbing on the order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/memory_planner.h"

namespace npuc::memory {

struct ArenaSearchOptions {
  // Order swaps tried by the hill climb once the seed orders are placed (0: seed orders only).
  // Each try re-places every buffer, O(n^2) for n buffers, so the budget is also capped by
  // `max_pair_checks` (total buffer pairs examined) to keep 1000-layer models fast.
  int climb_iterations = 400;
  uint64_t max_pair_checks = 200'000'000;
  // Stop as soon as the arena is within this factor of the lower bound (1.0: only at the bound).
  double good_enough_ratio = 1.0;
};

struct ArenaPlacement {
  std::vector<size_t> offsets;  // one per request
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
  std::string strategy;  // the seed order that won, "+climb" when the hill climb improved it
};

// Requests' bytes should already be multiples of `alignment` (a power of two). Deterministic.
ArenaPlacement placeArena(const std::vector<BufferRequest>& requests, size_t alignment,
                          const ArenaSearchOptions& options = {});

}  // namespace npuc::memory
