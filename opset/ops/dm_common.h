// Shared machinery of the data-movement op family: element-size dispatch, reading integer
// parameter tensors, a plain copy kernel for the reinterpreting ops, and StridedCopy, the one
// engine behind Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth.
//
// Data-movement kernels never look at element values, only at element sizes, so every storable
// dtype is handled by moving 1, 2, 4, 8 (or, after folding, 16) byte chunks.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "opset/registry.h"

namespace npuc {
namespace dm {

// Every storable dtype: what data-movement schemas accept for input 0.
std::vector<DType> allStorableTypes();

// Wraps a Kernel subclass constructed from a KernelContext into a KernelFactory.
template <typename K>
KernelFactory kernelOf() {
  return [](const KernelContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ctx); };
}

// Wrappers for registration: an UnsupportedOpError raised by shape inference or kernel creation
// is re-thrown with the node named in front (the evaluator passes UnsupportedOpError through
// untouched, as it is expected to name the node already).
InferFn namedInfer(InferFn f);
KernelFactory namedKernel(KernelFactory f);

// The values of an integer parameter tensor (scalar or 1-D int32/int64 constant).
// `what` names it in errors ("Reshape shape").
std::vector<int64_t> intValues(const Tensor& t, const char* what);
// The constant input `i` of a kernel as integers, or throws ShapeError naming `what`.
std::vector<int64_t> constIntInput(const KernelContext& ctx, size_t i, const char* what);

// Reads input `i` as a list of axes normalized to [0, rank); empty if the input is absent.
// Throws ShapeError on out-of-range or repeated axes.
std::vector<int64_t> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank, const char* what);

// a * b and a + b for output dims computed from a file's numbers (Tile repeats, block sizes, pads):
// a result int64 cannot hold is a ShapeError naming `what`, not a wrapped (undefined) value.
int64_t dimMul(int64_t a, int64_t b, const char* what);
int64_t dimAdd(int64_t a, int64_t b, const char* what);

// "Concat inputs 0 and 2 differ ..." helpers keep messages uniform.
std::string dimsStr(const std::vector<int64_t>& v);

// A fixed-size chunk of bytes moved with one load and one store.
template <size_t N>
struct Chunk {
  unsigned char bytes[N];
};

// Calls f(Chunk<N>{}) for the N equal to `bytes` (1, 2, 4, 8 or 16). Throws UnsupportedOpError
// otherwise; kernels call this only in constructors, so the check happens before run().
template <typename F>
void dispatchChunk(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(Chunk<1>{}); return;
    case 2: f(Chunk<2>{}); return;
    case 4: f(Chunk<4>{}); return;
    case 8: f(Chunk<8>{}); return;
    case 16: f(Chunk<16>{}); return;
    default:
      throw UnsupportedOpError("no data-movement kernel for " + std::to_string(bytes) + "-byte elements");
  }
}

template <size_t N>
inline void copyChunk(void* dst, const void* src) {
  std::memcpy(dst, src, N);  // compiles to a single move for N <= 16
}

// Maximum number of dims the odometer loops below handle (after merging contiguous dims).
constexpr size_t kMaxDims = 32;

// Calls fn(src_offset, dst_index) for every index of the first `n_outer` dims of `sizes`, in
// row-major order: src_offset is sum_k i_k * strides[k], dst_index advances by `inner` per step.
// Requires n_outer <= kMaxDims and no zero size; allocation-free (the odometer is on the stack).
template <typename Fn>
inline void forEachOuter(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                         size_t n_outer, int64_t inner, Fn&& fn) {
  std::array<int64_t, kMaxDims> idx{};
  int64_t src = 0;
  int64_t dst = 0;
  while (true) {
    fn(src, dst);
    if (n_outer == 0) return;
    dst += inner;
    size_t k = n_outer;
    while (true) {
      --k;
      src += strides[k];
      if (++idx[k] < sizes[k]) break;
      src -= strides[k] * sizes[k];
      idx[k] = 0;
      if (k == 0) return;
    }
  }
}

// Copies a strided view of the input into a contiguous output:
//   out[i_0, ..., i_{r-1}] = *(in + offset + sum_k i_k * stride_k)
// with strides and offset in BYTES (so a stride may be 0 for broadcast or negative for reversed
// slices). The constructor merges dims that are contiguous in both, drops size-1 dims, folds a
// small contiguous innermost dim into a wider element, and picks one of three loops:
//   * contiguous rows: memcpy per row;
//   * a (batched) 2-D transpose: out's second-to-last dim is unit-stride in the input, which is
//     what every "move one axis" permutation (NCHW<->NHWC, [B,S,H,D]->[B,H,S,D], ...) reduces to;
//     copied tile by tile so both sides stay in cache;
//   * anything else: an element loop over the innermost dim.
// run() allocates nothing and keeps its odometer on the stack.
class StridedCopy {
 public:
  StridedCopy() = default;
  StridedCopy(const Shape& out_shape, const std::vector<int64_t>& in_byte_strides, int64_t in_byte_offset,
              size_t elem_bytes);
  void run(const void* src, void* dst) const;

  // Row-major byte strides of a contiguous tensor of `shape` with `elem_bytes` elements.
  static std::vector<int64_t> contiguousStrides(const Shape& shape, size_t elem_bytes);

 private:
  enum class Loop { Empty, Scalar, Rows, Transpose2D, Elements };
  template <size_t N>
  void runTyped(const unsigned char* src, unsigned char* dst) const;
  void runRows(const unsigned char* src, unsigned char* dst) const;

  Loop loop_ = Loop::Empty;
  std::vector<int64_t> sizes_;    // after coalescing, outermost first
  std::vector<int64_t> strides_;  // input byte strides of sizes_
  int64_t offset_ = 0;
  size_t elem_ = 0;  // bytes per (possibly folded) element
};

// Writes out[i_0, ..., i_{r-1}] = in[maps[0][i_0], ..., maps[r-1][i_{r-1}]], or the fill value
// where any map entry is -1. This is Pad (every mode: the maps encode constant / reflect / edge /
// wrap) and nearest-neighbour Resize (the maps are the rounded source coordinates, -1 where
// tf_crop_and_resize extrapolates). Consecutive output rows reading the same source row are
// copied from the previous output row; a last-dim map that is mostly runs of consecutive indices
// (padding) is copied run by run with memcpy.
class IndexMapGather {
 public:
  IndexMapGather() = default;
  IndexMapGather(const Shape& in_shape, const std::vector<std::vector<int64_t>>& maps, size_t elem_bytes);
  // `fill` points at one element (elem_bytes) written where a map entry is -1.
  void run(const void* src, void* dst, const void* fill) const;

 private:
  struct Run {
    int64_t begin, len, src;  // output range [begin, begin+len) reads src, src+1, ... (or fill if src < 0)
  };
  template <size_t N>
  void runTyped(const unsigned char* src, unsigned char* dst, const unsigned char* fill) const;
  template <size_t N>
  void copyRow(const unsigned char* src_row, unsigned char* dst, const unsigned char* fill) const;

  Shape out_shape_;
  std::vector<std::vector<int64_t>> row_offsets_;  // outer dims: map * input stride (elements), or -1
  std::vector<int64_t> last_map_;
  std::vector<Run> runs_;  // last_map_ as runs; used when there are few of them
  bool use_runs_ = false;
  size_t elem_ = 0;
};

// Copies input 0 to output 0 unchanged (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout).
// aliasInput() lets the executor skip the copy by sharing storage.
class CopyKernel : public Kernel {
 public:
  explicit CopyKernel(const KernelContext&) {}
  void run(const KernelIO& io) const override { copyInput0(io); }
  int aliasInput() const override { return 0; }
  // Copies input 0 into output 0 unless the executor already made them share storage.
  static void copyInput0(const KernelIO& io);
};

}  // namespace dm

// Per-group registration, called from registerDataMovementOps (opset/ops/data_movement.cpp).
void registerDmReshapeOps(OpRegistry& reg);        // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout
void registerDmTransposeOps(OpRegistry& reg);      // Transpose, DepthToSpace, SpaceToDepth
void registerDmConcatSplitOps(OpRegistry& reg);    // Concat, Split
void registerDmSliceGatherOps(OpRegistry& reg);    // Slice, Gather, GatherElements
void registerDmPadTileExpandOps(OpRegistry& reg);  // Pad, Tile, Expand
void registerDmResizeOps(OpRegistry& reg);         // Resize, Upsample
void registerDmGenerateOps(OpRegistry& reg);       // Shape, Size, ConstantOfShape, Range, Constant

}  // namespace npuc
