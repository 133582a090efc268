#include "opset/ops/dm_common.h"

#include <algorithm>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace npuc {
namespace dm {

std::vector<DType> allStorableTypes() {
  return {DType::Float32, DType::UInt8, DType::Int8,    DType::UInt16,  DType::Int16,  DType::Int32,
          DType::Int64,   DType::Bool,  DType::Float16, DType::Float64, DType::UInt32, DType::UInt64};
}

namespace {
[[noreturn]] void rethrowNamingNode(const Node& node, const UnsupportedOpError& e) {
  throw UnsupportedOpError("node '" + node.name() + "' (" + node.opType() + "): " + e.what());
}
}  // namespace

InferFn namedInfer(InferFn f) {
  return [f = std::move(f)](InferContext& ctx) {
    try {
      f(ctx);
    } catch (const UnsupportedOpError& e) {
      rethrowNamingNode(ctx.node(), e);
    }
  };
}

KernelFactory namedKernel(KernelFactory f) {
  return [f = std::move(f)](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
    try {
      return f(ctx);
    } catch (const UnsupportedOpError& e) {
      rethrowNamingNode(ctx.node, e);
    }
  };
}

std::vector<int64_t> intValues(const Tensor& t, const char* what) {
  if (!isInteger(t.dtype())) {
    throw ShapeError(std::string(what) + " must be an integer tensor, got " + dtypeName(t.dtype()));
  }
  if (t.rank() > 1) {
    throw ShapeError(std::string(what) + " must be a scalar or 1-D, got shape " + shapeStr(t.shape()));
  }
  return t.toInt64Vector();
}

std::vector<int64_t> constIntInput(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.constInput(i);
  if (!t) throw ShapeError(std::string(what) + " (input " + std::to_string(i) + ") must be a constant");
  return intValues(*t, what);
}

std::vector<int64_t> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank, const char* what) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = normalizeAxis(a, rank, what);
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      throw ShapeError(std::string(what) + " " + dimsStr(axes) + " repeats axis " + std::to_string(n));
    }
    out.push_back(n);
  }
  return out;
}

std::string dimsStr(const std::vector<int64_t>& v) {
  return shapeStr(v);
}

int64_t dimMul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ShapeError(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows int64");
  return r;
}

int64_t dimAdd(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw ShapeError(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}

// ---------------------------------------------------------------- StridedCopy

std::vector<int64_t> StridedCopy::contiguousStrides(const Shape& shape, size_t elem_bytes) {
  std::vector<int64_t> s = shapeStrides(shape);
  for (int64_t& x : s) x *= static_cast<int64_t>(elem_bytes);
  return s;
}

namespace {
// Largest element (bytes) a contiguous innermost dim is folded into.
constexpr size_t kMaxFoldedBytes = 16;
// Transpose tiles: this many bytes of a tile edge, so a tile of 4-byte elements is 16x16 and
// its rows (read side) and columns (write side) stay within L1.
constexpr int64_t kTileEdgeBytes = 64;
}  // namespace

StridedCopy::StridedCopy(const Shape& out_shape, const std::vector<int64_t>& in_byte_strides,
                         int64_t in_byte_offset, size_t elem_bytes)
    : offset_(in_byte_offset), elem_(elem_bytes) {
  if (out_shape.size() != in_byte_strides.size())
    throw Error("StridedCopy: shape and strides differ in rank");
  for (int64_t d : out_shape) {
    if (d == 0) return;  // Loop::Empty
  }
  // Drop size-1 dims; merge an outer dim into its inner neighbour when they are contiguous.
  for (size_t k = 0; k < out_shape.size(); ++k) {
    if (out_shape[k] == 1) continue;
    sizes_.push_back(out_shape[k]);
    strides_.push_back(in_byte_strides[k]);
  }
  for (size_t k = sizes_.size(); k-- > 1;) {
    if (strides_[k - 1] == strides_[k] * sizes_[k]) {
      sizes_[k - 1] *= sizes_[k];
      strides_[k - 1] = strides_[k];
      sizes_.erase(sizes_.begin() + static_cast<std::ptrdiff_t>(k));
      strides_.erase(strides_.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  // A short contiguous innermost run (e.g. the C=3 of an RGB pixel, or 2 interleaved halves)
  // is moved as one wider element.
  if (sizes_.size() >= 2 && strides_.back() == static_cast<int64_t>(elem_)) {
    const size_t folded = elem_ * static_cast<size_t>(sizes_.back());
    if (folded <= kMaxFoldedBytes && (folded & (folded - 1)) == 0) {
      elem_ = folded;
      sizes_.pop_back();
      strides_.pop_back();
    }
  }
  if (sizes_.size() > kMaxDims) {
    throw UnsupportedOpError("strided copy over " + std::to_string(sizes_.size()) +
                             " non-mergeable dims exceeds the supported " + std::to_string(kMaxDims));
  }
  const int64_t e = static_cast<int64_t>(elem_);
  if (sizes_.empty()) {
    loop_ = Loop::Scalar;
  } else if (strides_.back() == e) {
    loop_ = Loop::Rows;
  } else if (sizes_.size() >= 2 && strides_[sizes_.size() - 2] == e) {
    loop_ = Loop::Transpose2D;
  } else {
    loop_ = Loop::Elements;
  }
  dispatchChunk(elem_, [](auto) {});  // refuse unsupported element sizes now, not in run()
}

void StridedCopy::runRows(const unsigned char* src, unsigned char* dst) const {
  const size_t r = sizes_.size();
  const int64_t row = sizes_[r - 1];
  const size_t row_bytes = static_cast<size_t>(row) * elem_;
  forEachOuter(sizes_, strides_, r - 1, row, [&](int64_t s, int64_t d) {
    std::memcpy(dst + d * static_cast<int64_t>(elem_), src + s, row_bytes);
  });
}

namespace {

#if defined(__SSE2__)
// 4x4 block of 4-byte elements: four 16-byte loads along the input's contiguous axis, an
// in-register transpose, four 16-byte stores. Bit patterns pass through unchanged (shuffles
// only), so this serves int32/uint32 as well as float.
inline void transposeBlock4x4(const unsigned char* in, int64_t in_stride, unsigned char* out,
                              int64_t out_stride) {
  __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(in));
  __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(in + in_stride));
  __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(in + 2 * in_stride));
  __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(in + 3 * in_stride));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(reinterpret_cast<float*>(out), r0);
  _mm_storeu_ps(reinterpret_cast<float*>(out + out_stride), r1);
  _mm_storeu_ps(reinterpret_cast<float*>(out + 2 * out_stride), r2);
  _mm_storeu_ps(reinterpret_cast<float*>(out + 3 * out_stride), r3);
}
#endif

// One tile [i0, i1) x [j0, j1) of out[i][j] = in[i * N + j * col_stride] (out row length `cols`).
template <size_t N>
inline void transposeTile(const unsigned char* in, unsigned char* out, int64_t i0, int64_t i1, int64_t j0,
                          int64_t j1, int64_t cols, int64_t col_stride) {
  constexpr int64_t n = static_cast<int64_t>(N);
  int64_t i = i0;
#if defined(__SSE2__)
  if constexpr (N == 4) {
    const int64_t j4 = j0 + (j1 - j0) / 4 * 4;
    for (; i + 4 <= i1; i += 4) {
      unsigned char* o = out + (i * cols) * n;
      const unsigned char* p = in + i * n;
      int64_t j = j0;
      for (; j < j4; j += 4) transposeBlock4x4(p + j * col_stride, col_stride, o + j * n, cols * n);
      for (int64_t ii = 0; ii < 4; ++ii) {
        for (int64_t jj = j; jj < j1; ++jj)
          copyChunk<N>(o + (ii * cols + jj) * n, p + ii * n + jj * col_stride);
      }
    }
  }
#endif
  for (; i < i1; ++i) {
    unsigned char* o = out + (i * cols) * n;
    const unsigned char* p = in + i * n;
    for (int64_t j = j0; j < j1; ++j) copyChunk<N>(o + j * n, p + j * col_stride);
  }
}

}  // namespace

template <size_t N>
void StridedCopy::runTyped(const unsigned char* src, unsigned char* dst) const {
  const size_t r = sizes_.size();
  constexpr int64_t n = static_cast<int64_t>(N);
  if (loop_ == Loop::Elements) {
    const int64_t len = sizes_[r - 1];
    const int64_t step = strides_[r - 1];
    forEachOuter(sizes_, strides_, r - 1, len, [&](int64_t s, int64_t d) {
      const unsigned char* in = src + s;
      unsigned char* out = dst + d * n;
      for (int64_t j = 0; j < len; ++j) copyChunk<N>(out + j * n, in + j * step);
    });
    return;
  }
  // Transpose2D: out[i][j] = in[i * N + j * col_stride]; tiles keep both sides cache-resident.
  const int64_t rows = sizes_[r - 2];
  const int64_t cols = sizes_[r - 1];
  const int64_t col_stride = strides_[r - 1];
  const int64_t tile = std::max<int64_t>(kTileEdgeBytes / n, 4);
  forEachOuter(sizes_, strides_, r - 2, rows * cols, [&](int64_t s, int64_t d) {
    const unsigned char* in = src + s;
    unsigned char* out = dst + d * n;
    for (int64_t i0 = 0; i0 < rows; i0 += tile) {
      const int64_t i1 = std::min(rows, i0 + tile);
      for (int64_t j0 = 0; j0 < cols; j0 += tile) {
        const int64_t j1 = std::min(cols, j0 + tile);
        transposeTile<N>(in, out, i0, i1, j0, j1, cols, col_stride);
      }
    }
  });
}

void StridedCopy::run(const void* src_v, void* dst_v) const {
  const unsigned char* src = static_cast<const unsigned char*>(src_v) + offset_;
  unsigned char* dst = static_cast<unsigned char*>(dst_v);
  switch (loop_) {
    case Loop::Empty: return;
    case Loop::Scalar: std::memcpy(dst, src, elem_); return;
    case Loop::Rows: runRows(src, dst); return;
    case Loop::Transpose2D:
    case Loop::Elements:
      switch (elem_) {
        case 1: runTyped<1>(src, dst); return;
        case 2: runTyped<2>(src, dst); return;
        case 4: runTyped<4>(src, dst); return;
        case 8: runTyped<8>(src, dst); return;
        default: runTyped<16>(src, dst); return;
      }
  }
}

// ---------------------------------------------------------------- IndexMapGather

namespace {
// Copy the last dim run by run when runs are at least this long on average; shorter runs
// (nearest-neighbour upsampling: 0,0,1,1,...) go faster through the plain index loop.
constexpr int64_t kMinAverageRunLength = 4;
}  // namespace

IndexMapGather::IndexMapGather(const Shape& in_shape, const std::vector<std::vector<int64_t>>& maps,
                               size_t elem_bytes)
    : elem_(elem_bytes) {
  if (maps.size() != in_shape.size()) throw Error("IndexMapGather: one map per input dim is required");
  if (in_shape.size() > kMaxDims) {
    throw UnsupportedOpError("index-map gather supports rank <= " + std::to_string(kMaxDims));
  }
  dispatchChunk(elem_, [](auto) {});
  const std::vector<int64_t> strides = shapeStrides(in_shape);
  for (size_t d = 0; d < maps.size(); ++d) {
    out_shape_.push_back(static_cast<int64_t>(maps[d].size()));
    for (int64_t x : maps[d]) {
      if (x >= in_shape[d]) throw Error("IndexMapGather: map entry out of range");
    }
  }
  if (maps.empty()) return;
  for (size_t d = 0; d + 1 < maps.size(); ++d) {
    std::vector<int64_t> off(maps[d].size());
    for (size_t i = 0; i < off.size(); ++i) off[i] = maps[d][i] < 0 ? -1 : maps[d][i] * strides[d];
    row_offsets_.push_back(std::move(off));
  }
  last_map_ = maps.back();
  for (int64_t j = 0; j < static_cast<int64_t>(last_map_.size()); ++j) {
    const int64_t x = last_map_[static_cast<size_t>(j)];
    if (!runs_.empty()) {
      Run& r = runs_.back();
      const bool extends = (x < 0 && r.src < 0) || (x >= 0 && r.src >= 0 && x == r.src + r.len);
      if (extends) {
        ++r.len;
        continue;
      }
    }
    runs_.push_back({j, 1, x});
  }
  use_runs_ =
      static_cast<int64_t>(runs_.size()) * kMinAverageRunLength <= static_cast<int64_t>(last_map_.size());
}

template <size_t N>
void IndexMapGather::copyRow(const unsigned char* src_row, unsigned char* dst,
                             const unsigned char* fill) const {
  constexpr int64_t n = static_cast<int64_t>(N);
  if (use_runs_) {
    for (const Run& r : runs_) {
      unsigned char* o = dst + r.begin * n;
      if (r.src >= 0) {
        std::memcpy(o, src_row + r.src * n, static_cast<size_t>(r.len) * N);
      } else {
        for (int64_t j = 0; j < r.len; ++j) copyChunk<N>(o + j * n, fill);
      }
    }
    return;
  }
  const int64_t w = static_cast<int64_t>(last_map_.size());
  for (int64_t j = 0; j < w; ++j) {
    const int64_t x = last_map_[static_cast<size_t>(j)];
    copyChunk<N>(dst + j * n, x < 0 ? fill : src_row + x * n);
  }
}

template <size_t N>
void IndexMapGather::runTyped(const unsigned char* src, unsigned char* dst, const unsigned char* fill) const {
  constexpr int64_t n = static_cast<int64_t>(N);
  const size_t outer_dims = row_offsets_.size();
  const int64_t w = static_cast<int64_t>(last_map_.size());
  const size_t row_bytes = static_cast<size_t>(w) * N;
  const int64_t rows = shapeNumel(out_shape_) / w;
  std::array<int64_t, kMaxDims> idx{};
  int64_t prev_src = -2;  // no previous row
  for (int64_t r = 0; r < rows; ++r, dst += w * n) {
    int64_t row = 0;  // source row offset (elements), -1 if the row lies in the fill region
    for (size_t d = 0; d < outer_dims && row >= 0; ++d) {
      const int64_t o = row_offsets_[d][static_cast<size_t>(idx[d])];
      row = o < 0 ? -1 : row + o;
    }
    if (row == prev_src) {
      std::memcpy(dst, dst - w * n, row_bytes);
    } else if (row < 0) {
      for (int64_t j = 0; j < w; ++j) copyChunk<N>(dst + j * n, fill);
    } else {
      copyRow<N>(src + row * n, dst, fill);
    }
    prev_src = row;
    for (size_t d = outer_dims; d-- > 0;) {
      if (++idx[d] < out_shape_[d]) break;
      idx[d] = 0;
    }
  }
}

void IndexMapGather::run(const void* src_v, void* dst_v, const void* fill_v) const {
  const auto* src = static_cast<const unsigned char*>(src_v);
  auto* dst = static_cast<unsigned char*>(dst_v);
  const auto* fill = static_cast<const unsigned char*>(fill_v);
  if (out_shape_.empty()) {
    std::memcpy(dst, src, elem_);
    return;
  }
  if (shapeNumel(out_shape_) == 0) return;
  dispatchChunk(elem_, [&](auto chunk) { runTyped<sizeof(chunk)>(src, dst, fill); });
}

// ---------------------------------------------------------------- CopyKernel

void CopyKernel::copyInput0(const KernelIO& io) {
  const TensorView& in = io.inputs[0];
  const TensorView& out = io.outputs[0];
  if (in.data != out.data && out.nbytes() != 0) std::memcpy(out.data, in.data, out.nbytes());
}

}  // namespace dm
}  // namespace npuc
