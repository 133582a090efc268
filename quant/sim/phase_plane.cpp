#include "quant/sim/phase_plane.h"

#include <algorithm>
#include <type_traits>

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

#if defined(__AVX512BW__) && defined(__AVX512VBMI__)
constexpr int64_t kVectorBytes = 64;

// Lanes [lo, hi) of a 64-byte vector, both clipped to [0, 64], as a mask.
inline __mmask64 laneRange(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, kVectorBytes);
  hi = std::clamp<int64_t>(hi, 0, kVectorBytes);
  if (hi <= lo) return 0;
  const __mmask64 below_hi = hi == kVectorBytes ? ~__mmask64{0} : (__mmask64{1} << hi) - 1;
  return below_hi & ~((__mmask64{1} << lo) - 1);
}

// The first `bytes` of v at dst: a whole-vector store when it ends before `limit` (what it
// writes past `bytes` belongs to later rows of the same sub-plane, rewritten afterwards), else
// a masked one.
inline void storePiece(int8_t* dst, __m512i v, int64_t bytes, const int8_t* limit) {
  if (dst + kVectorBytes <= limit) {
    _mm512_storeu_si512(dst, v);
  } else {
    _mm512_mask_storeu_epi8(dst, laneRange(0, bytes), v);
  }
}
inline void storePiece(int8_t* dst, __m256i v, int64_t bytes, const int8_t* limit) {
  if (dst + kVectorBytes / 2 <= limit) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  } else {
    _mm256_mask_storeu_epi8(dst, static_cast<__mmask32>(laneRange(0, bytes)), v);
  }
}

// PhasePlane::fill for one or two column phases, row by row in each sub-plane's memory order:
// each 64 padded columns are ONE masked load of the input row (lanes outside the input take the
// pad byte; masked-off lanes are never read), split into even/odd columns by one byte permute
// for two phases. No separate padding pass and no per-row library call: the split planes of
// small convs cost more in call overhead than in bytes. Returns false for more column phases.
bool fillOneOrTwoColumnPhases(const PhasePlane& d, const ConvGeometry& g, const int8_t* plane, int8_t pad,
                              int8_t* dst) {
  if (d.col_phases > 2) return false;
  const __m512i pad_v = _mm512_set1_epi8(pad);
  const int64_t sub_elements = d.subPlaneElements();
  // Padded columns 2j then 2j+1 of a 64-column chunk: even ones to the low half, odd to the high.
  alignas(64) static constexpr uint8_t kEvenThenOdd[kVectorBytes] = {
      0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42,
      44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23,
      25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i even_then_odd = _mm512_load_si512(kEvenThenOdd);
  // Geometry in locals (the loop would reload it through the references after every store).
  const int64_t sub_rows = d.sub_rows, sub_cols = d.sub_cols, row_phases = d.row_phases;
  const int64_t pad_top = g.pad_top, pad_left = g.pad_left, in_h = g.in_h, in_w = g.in_w;
  // Row phase by row phase (no division per row): padded row r = i * row_phases + phase.
  for (int64_t phase = 0; phase < row_phases; ++phase) {
    const int64_t sub = phase * d.col_phases;
    int8_t* row0 = dst + sub * sub_elements;
    const int8_t* end0 = row0 + sub_elements;
    for (int64_t i = 0; i < sub_rows; ++i, row0 += sub_cols) {
      const int64_t iy = i * row_phases + phase - pad_top;
      const bool input_row = iy >= 0 && iy < in_h;
      const int8_t* src = plane + iy * in_w - pad_left;  // indexed by padded column
      // Padded columns [c0, c0 + 64) of this row.
      auto chunk = [&](int64_t c0) {
        if (!input_row) return pad_v;
        return _mm512_mask_loadu_epi8(pad_v, laneRange(pad_left - c0, pad_left + in_w - c0), src + c0);
      };
      if (d.col_phases == 1) {
        for (int64_t i0 = 0; i0 < sub_cols; i0 += kVectorBytes) {
          storePiece(row0 + i0, chunk(i0), std::min(kVectorBytes, sub_cols - i0), end0);
        }
        continue;
      }
      int8_t* row1 = row0 + sub_elements;
      const int8_t* end1 = end0 + sub_elements;
      for (int64_t i0 = 0; i0 < sub_cols; i0 += kVectorBytes / 2) {
        const __m512i split = _mm512_permutexvar_epi8(even_then_odd, chunk(2 * i0));
        const int64_t bytes = std::min(kVectorBytes / 2, sub_cols - i0);
        storePiece(row0 + i0, _mm512_castsi512_si256(split), bytes, end0);
        storePiece(row1 + i0, _mm512_extracti64x4_epi64(split, 1), bytes, end1);
      }
    }
  }
  // The spare row of each sub-plane last: the whole-vector stores above may have run into it.
  for (int64_t sub = 0; sub < d.row_phases * d.col_phases; ++sub) {
    int8_t* spare = dst + sub * sub_elements + d.sub_rows * d.sub_cols;
    std::fill(spare, spare + d.sub_cols, pad);
  }
  return true;
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
#if defined(__AVX512BW__) && defined(__AVX512VBMI__)
  if constexpr (std::is_same_v<T, int8_t>) {
    if (fillOneOrTwoColumnPhases(*this, g, plane, pad, dst)) return;
  }
#endif
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
