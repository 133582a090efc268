// oneDNN glue shared by the nn kernels: the CPU engine, plain memory descriptors, and a
// workspace carver that hands out the per-run scratch areas a kernel needs.
//
// Threading. Debian's libdnnl 2.6 is built with DNNL_CPU_RUNTIME=OMP (see dnnl_config.h; the
// library links libgomp), so every primitive parallelizes with OpenMP and uses as many threads as
// the calling thread's OpenMP "nthreads-var" allows. That is set by the OMP_NUM_THREADS environment
// variable at process start, or per calling thread by omp_set_num_threads() (the host runtime or
// benchmark must call it from the thread that runs kernels; libgomp gives threads not created by
// OpenMP the process-wide default). oneDNN has no thread-count knob of its own in this runtime
// (dnnl_threadpool_interop_* exists only in THREADPOOL builds). With OMP_NUM_THREADS=1 every
// primitive runs sequentially on the caller's thread, which is the configuration benchmarked
// against ONNX Runtime with intra_op_num_threads=1.
//
// Per-run state. Primitives are created once in a kernel's constructor with
// scratchpad_mode::user, so executing them touches no shared mutable state: scratch memory comes
// from KernelIO::workspace and each calling thread executes on its own dnnl::stream (created on
// the thread's first execution, see execute()). oneDNN still needs small dnnl::memory handle objects per execution; those are the
// only allocations a run makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "ir/tensor.h"

namespace npuc::dnnl_util {

// The process-wide CPU engine (created on first use, immutable afterwards).
const dnnl::engine& cpuEngine();

dnnl::memory::dims toDims(const Shape& shape);
// Plain row-major (C order) descriptor: nchw for 4-D, ncdhw for 5-D, ab for matrices, ...
dnnl::memory::desc plainDesc(const Shape& shape);
// Wraps `data` (may be const input memory; oneDNN only reads sources) in a memory handle.
dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data);

// Executes `prim` synchronously on a stream of cpuEngine().
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args);
// One-shot reorder between two memories of the same logical shape (used at kernel construction).
void reorderNow(const dnnl::memory& from, const dnnl::memory& to);

// Rounds a byte count up to the tensor alignment so carved areas stay 64-byte aligned.
inline size_t alignUp(size_t bytes) {
  return (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// Splits a kernel's workspace into named areas. The constructor adds the areas (recording offsets);
// run() asks for each area's address inside the KernelIO workspace.
class WorkspaceLayout {
 public:
  // Reserves `bytes` and returns the area's offset (0 bytes gives a valid empty area).
  size_t reserve(size_t bytes) {
    const size_t offset = total_;
    total_ += alignUp(bytes);
    return offset;
  }
  size_t totalBytes() const { return total_; }
  static void* at(void* workspace, size_t offset) { return static_cast<uint8_t*>(workspace) + offset; }

 private:
  size_t total_ = 0;
};

}  // namespace npuc::dnnl_util
