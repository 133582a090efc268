// The memory one run of a model allocates, checked before anything is allocated. A model whose
// outputs or activations cannot fit (a Resize or an Expand to a huge shape, each tensor still
// under kMaxTensorBytes) is refused with a ResourceError naming its largest buffers, instead of
// failing half-way in an allocator, or being killed by the OOM killer once overcommitted pages
// are touched.
//
// Two limits apply:
//   the caller's cap  RunMemoryLimits::max_run_bytes, on everything the run holds (the Python edge
//                     fills it from a max_run_bytes argument or NPUC_MAX_RUN_BYTES; the library
//                     reads no environment);
//   the machine       the memory available now (MemAvailable), on what the run allocates anew (an
//                     arena pooled by an earlier run is already resident).
// A container's cgroup limit is not seen by MemAvailable: set the cap there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace npuc {

struct RunMemoryLimits {
  uint64_t max_run_bytes = 0;  // the caller's cap on one run; 0 means none
};

// One buffer a run holds.
struct RunBuffer {
  std::string what;  // "output 'y' float32[1,3,4096,4096]", "activation arena", ...
  uint64_t bytes = 0;
  bool pooled = false;  // kept in a pool after the run and reused by the next one (an arena)
};

// Everything one run of a runtime holds, computed once when the runtime is built (the runtimes'
// runFootprint()), so the check before each run costs a comparison, not a pass over the graph.
class RunFootprint {
 public:
  void add(std::string what, uint64_t bytes, bool pooled = false);
  // A tensor's buffer: "<role> '<name>' float32[1,3,8,8]", numel * element size.
  void addTensor(const std::string& role, const std::string& name, DType dtype, const Shape& shape);

  const std::vector<RunBuffer>& buffers() const { return buffers_; }
  uint64_t totalBytes() const { return total_; }
  uint64_t pooledBytes() const { return pooled_; }

  // Throws ResourceError, naming the largest buffers, their sizes and the total, when the total
  // exceeds limits.max_run_bytes (when set) or what the run allocates anew (everything but the
  // pooled buffers when `pool_has_idle`) exceeds `available` (when known).
  void check(const RunMemoryLimits& limits, bool pool_has_idle, std::optional<uint64_t> available) const;
  // The same against the memory this machine has available now.
  void check(const RunMemoryLimits& limits, bool pool_has_idle) const;

 private:
  std::vector<RunBuffer> buffers_;
  uint64_t total_ = 0;
  uint64_t pooled_ = 0;
};

// numel * element size of a static shape (ResourceError beyond 64 bits).
uint64_t tensorBufferBytes(DType dtype, const Shape& shape);

// The memory this machine has available now: MemAvailable of /proc/meminfo, else free physical
// pages (sysconf); nullopt when neither is known.
std::optional<uint64_t> availableMemoryBytes();

}  // namespace npuc
