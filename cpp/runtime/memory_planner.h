// Static placement of activation buffers in one arena from their live ranges.
//
// The planner knows nothing about graphs: it places abstract buffers, each with a size and a live
// range [first, last] of step indices (inclusive), so that no two buffers whose live ranges
// intersect overlap in memory. The executor turns graph values into such buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuc {

struct BufferRequest {
  size_t bytes = 0;   // as requested; the planner rounds up to the alignment
  int64_t first = 0;  // step that writes the buffer first
  int64_t last = 0;   // last step that reads it (>= first)
};

struct MemoryPlan {
  std::vector<size_t> offsets;   // one per request, multiples of `alignment`
  size_t arena_bytes = 0;        // end of the highest placed buffer
  size_t lower_bound_bytes = 0;  // max over steps of the sum of live (rounded) sizes
};

// Places every request. Greedy by size, largest first: each buffer goes into the smallest gap
// (best fit) between already placed buffers whose live ranges intersect its own, or on top of
// them when no gap is large enough. Deterministic for identical requests.
MemoryPlan planMemory(const std::vector<BufferRequest>& requests, size_t alignment);

// The placement core planMemory uses, in a caller-chosen order: each request in `order` (a
// permutation of request indices) goes into the best-fit gap among the already placed requests
// whose live ranges intersect its own. Other planners (cpp/memory) search over orders with it.
// lower_bound_bytes is left 0 (callers compute it once, not per order).
MemoryPlan placeInOrder(const std::vector<BufferRequest>& requests, size_t alignment,
                        const std::vector<size_t>& order);

// The lower bound alone: max over steps of the sum of sizes (rounded to `alignment`) live then.
size_t liveBytesLowerBound(const std::vector<BufferRequest>& requests, size_t alignment);

// Rounds `bytes` up to a multiple of `alignment` (a power of two).
inline size_t alignUp(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace npuc
