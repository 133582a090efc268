#include "opset/ops/dm_common.h"

#include <algorithm>

namespace npuc {
namespace dm {

std::vector<DType> allStorableTypes() {
  return {DType::Float32, DType::UInt8,   DType::Int8,    DType::UInt16, DType::Int16,
          DType::Int32,   DType::Int64,   DType::Bool,    DType::Float16, DType::Float64,
          DType::UInt32,  DType::UInt64};
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

std::string dimsStr(const std::vector<int64_t>& v) { return shapeStr(v); }

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
  if (out_shape.size() != in_byte_strides.size()) throw Error("StridedCopy: shape and strides differ in rank");
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
        for (int64_t i = i0; i < i1; ++i) {
          unsigned char* o = out + (i * cols) * n;
          const unsigned char* p = in + i * n;
          for (int64_t j = j0; j < j1; ++j) copyChunk<N>(o + j * n, p + j * col_stride);
        }
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

// ---------------------------------------------------------------- CopyKernel

void CopyKernel::copyInput0(const KernelIO& io) {
  const TensorView& in = io.inputs[0];
  const TensorView& out = io.outputs[0];
  if (in.data != out.data && out.nbytes() != 0) std::memcpy(out.data, in.data, out.nbytes());
}

}  // namespace dm
}  // namespace npuc
