#include "quant/sim/phase_plane.h"

#include <algorithm>

#if defined(__AVX512BW__) && defined(__AVX512VBMI__)
#include <immintrin.h>
#endif

namespace npuc::quant {

namespace {

// Padded rows/columns [lo, hi) that hold input (padded coordinate = input coordinate + pad).
std::pair<int64_t, int64_t> inputSpan(int64_t padded, int64_t in, int64_t pad) {
  return {std::min(pad, padded), std::max(std::min(in + pad, padded), std::min(pad, padded))};
}

}  // namespace

PhasePlane PhasePlane::forConv(const ConvGeometry& g) {
  const int64_t rows = (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1;
  const int64_t cols = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  PhasePlane d;
  d.row_phases = g.stride_h;
  d.col_phases = g.stride_w;
  d.sub_rows = (rows + g.stride_h - 1) / g.stride_h;
  d.sub_cols = (cols + g.stride_w - 1) / g.stride_w;
  return d;
}

std::vector<int64_t> PhasePlane::tapOffsets(const ConvGeometry& g) const {
  std::vector<int64_t> offsets;
  for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      const int64_t r = ky * g.dilation_h, c = kx * g.dilation_w;
      const int64_t sub = (r % row_phases) * col_phases + c % col_phases;
      offsets.push_back(sub * subPlaneElements() + (r / row_phases) * sub_cols + c / col_phases);
    }
  }
  return offsets;
}

// dst[i] = src[i * kStride] for i in [first, end): a compile-time stride the compiler turns into
// vector shuffles (a run-time stride stays a scalar loop).
template <int kStride, typename T>
void gatherStrided(const int8_t* __restrict src, int64_t first, int64_t end, T* __restrict dst) {
  // Source and destination are distinct buffers (input tensor, workspace): no alias checks.
#pragma GCC ivdep
  for (int64_t i = first; i < end; ++i) dst[i] = src[i * kStride];
}

#if defined(__AVX512BW__) && defined(__AVX512VBMI__)
// The even bytes of 2 * n source bytes. Rows are short (7 to 114 elements) and the compiler's
// vector loop leaves short rows to a scalar tail, so this takes the even bytes of 64 loaded
// bytes with masked loads/stores instead.
void evenBytesOfRow(const int8_t* src, int64_t n, int8_t* dst) {
  const __m512i even = _mm512_set_epi8(126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102, 100,
                                       98, 96, 94, 92, 90, 88, 86, 84, 82, 80, 78, 76, 74, 72, 70, 68, 66, 64,
                                       62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28,
                                       26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t i = 0; i < n; i += 32) {
    const int64_t left = n - i;
    const __mmask32 m = left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
    const int64_t need = std::min<int64_t>(64, 2 * left - 1);
    const __mmask64 load = need >= 64 ? ~__mmask64{0} : (__mmask64{1} << need) - 1;
    const __m512i bytes = _mm512_maskz_loadu_epi8(load, src + 2 * i);
    _mm256_mask_storeu_epi8(dst + i, m, _mm512_castsi512_si256(_mm512_permutexvar_epi8(even, bytes)));
  }
}

void gatherStrided(int64_t stride, const int8_t* src, int64_t first, int64_t end, int8_t* dst) {
  if (end <= first) return;
  if (stride == 1) {
    std::copy(src + first, src + end, dst + first);
  } else if (stride == 2) {
    evenBytesOfRow(src + 2 * first, end - first, dst + first);
  } else {
    for (int64_t i = first; i < end; ++i) dst[i] = src[i * stride];
  }
}

#endif

template <typename T>
void gatherStrided(int64_t stride, const int8_t* src, int64_t first, int64_t end, T* dst) {
  switch (stride) {
    case 1: gatherStrided<1>(src, first, end, dst); break;
    case 2: gatherStrided<2>(src, first, end, dst); break;
    default:
      for (int64_t i = first; i < end; ++i) dst[i] = src[i * stride];
  }
}

template <typename T>
void PhasePlane::fill(const ConvGeometry& g, const int8_t* plane, T pad, T* dst) const {
  const auto [row_lo, row_hi] = inputSpan(sub_rows * row_phases, g.in_h, g.pad_top);
  const auto [col_lo, col_hi] = inputSpan(sub_cols * col_phases, g.in_w, g.pad_left);
  // Padding only where no input lands; when there is no padding at all, nothing is filled twice.
  const bool full_rows = row_lo == 0 && row_hi == sub_rows * row_phases;
  const bool full_cols = col_lo == 0 && col_hi == sub_cols * col_phases;
  if (!(full_rows && full_cols)) {
    std::fill(dst, dst + elements(), pad);
  } else {
    // Only the spare row of each sub-plane is not written below.
    for (int64_t sub = 0; sub < row_phases * col_phases; ++sub) {
      T* spare = dst + sub * subPlaneElements() + sub_rows * sub_cols;
      std::fill(spare, spare + sub_cols, pad);
    }
  }
  for (int64_t r = row_lo; r < row_hi; ++r) {
    const int8_t* src = plane + (r - g.pad_top) * g.in_w - g.pad_left;  // indexed by padded column
    T* row = dst + (r % row_phases) * col_phases * subPlaneElements() + (r / row_phases) * sub_cols;
    for (int64_t phase = 0; phase < col_phases; ++phase) {
      // Padded columns c = i * col_phases + phase within [col_lo, col_hi).
      const int64_t first = (std::max<int64_t>(col_lo - phase, 0) + col_phases - 1) / col_phases;
      const int64_t end = std::max<int64_t>(first, (col_hi - phase + col_phases - 1) / col_phases);
      gatherStrided(col_phases, src + phase, first, end, row + phase * subPlaneElements());
    }
  }
}

void PhasePlane::compact(const ConvGeometry& g, const int8_t* virtual_plane, int8_t* dense) const {
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    std::copy(virtual_plane + oy * sub_cols, virtual_plane + oy * sub_cols + g.out_w, dense + oy * g.out_w);
  }
}

template void PhasePlane::fill<int8_t>(const ConvGeometry&, const int8_t*, int8_t, int8_t*) const;

}  // namespace npuc::quant
