#include "quant/sim/requant_row.h"

#include "quant/int_limits.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define NPUC_REQUANT_AVX512 1
#endif

namespace npuc::quant {

namespace {

void requantizeRowScalar(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = requantizeToInt8(acc[i] + bias, m, output_zero_point);
}

#ifdef NPUC_REQUANT_AVX512

// The same arithmetic as applyMultiplier on the eight int64 lanes of `product` (= acc * m,
// exact: |acc * m| < 2^62): round half away from zero of product / 2^r is
// floor((product + 2^(r-1) - [product < 0]) / 2^r), an arithmetic shift (for negative p,
// -floor((-p + h) / 2^r) = floor((p + h - 1) / 2^r) with h = 2^(r-1)). Then saturating to
// int32, adding z_out and saturating to int8 equals clamping (rounded + z_out) to [-128, 127]
// directly, since |z_out| <= 128 and int32 saturation only matters far outside the int8 range.
inline __m512i roundShiftClamp(__m512i product, __m512i offset, __m128i right_shift, __m512i zero_point,
                               __m512i lo, __m512i hi) {
  const __m512i biased = _mm512_add_epi64(_mm512_add_epi64(product, offset), _mm512_srai_epi64(product, 63));
  const __m512i rounded = _mm512_add_epi64(_mm512_sra_epi64(biased, right_shift), zero_point);
  return _mm512_min_epi64(_mm512_max_epi64(rounded, lo), hi);
}

#endif

}  // namespace

namespace {

#ifdef NPUC_REQUANT_AVX512
// One row with the row-independent constants already in registers.
inline void requantizeRowAvx512(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                                __m512i zero_point, __m512i lo, __m512i hi, int8_t* out) {
  constexpr int64_t kLanes = 16;
  const __m512i multiplier = _mm512_set1_epi64(m.multiplier);
  const __m512i offset = _mm512_set1_epi64(int64_t{1} << (m.rightShift() - 1));
  const __m128i right_shift = _mm_cvtsi32_si128(m.rightShift());
  const __m512i bias_v = _mm512_set1_epi32(bias);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 lanes = n - i >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i a = _mm512_add_epi32(_mm512_maskz_loadu_epi32(lanes, acc + i), bias_v);
    // _mm512_mul_epi32 multiplies the sign-extended low int32 of each 64-bit lane: the even
    // accumulators directly, the odd ones after shifting them down.
    const __m512i even =
        roundShiftClamp(_mm512_mul_epi32(a, multiplier), offset, right_shift, zero_point, lo, hi);
    const __m512i odd = roundShiftClamp(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), multiplier), offset,
                                        right_shift, zero_point, lo, hi);
    const __m512i both = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_slli_epi64(odd, 32));
    // Narrow in a register, then store: a masked narrowing store to memory is slow on AMD Zen 4.
    const __m128i bytes = _mm512_cvtepi32_epi8(both);
    if (lanes == __mmask16{0xFFFF}) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
    } else {
      _mm_mask_storeu_epi8(out + i, lanes, bytes);
    }
  }
}
#endif

}  // namespace

void requantizeRowToInt8(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out) {
  requantizeRowsToInt8(acc, 1, n, n, &bias, &m, output_zero_point, out, n);
}

void requantizeRowsToInt8(const int32_t* acc, int64_t rows, int64_t n, int64_t acc_stride,
                          const int32_t* biases, const FixedPointMultiplier* multipliers,
                          int32_t output_zero_point, int8_t* out, int64_t out_stride) {
#ifdef NPUC_REQUANT_AVX512
  const __m512i zero_point = _mm512_set1_epi64(output_zero_point);
  const __m512i lo = _mm512_set1_epi64(kActivationQMin), hi = _mm512_set1_epi64(kActivationQMax);
  for (int64_t r = 0; r < rows; ++r) {
    if (multipliers[r].isZero()) {
      requantizeRowScalar(acc + r * acc_stride, n, biases[r], multipliers[r], output_zero_point,
                          out + r * out_stride);
    } else {
      requantizeRowAvx512(acc + r * acc_stride, n, biases[r], multipliers[r], zero_point, lo, hi,
                          out + r * out_stride);
    }
  }
#else
  for (int64_t r = 0; r < rows; ++r) {
    requantizeRowScalar(acc + r * acc_stride, n, biases[r], multipliers[r], output_zero_point,
                        out + r * out_stride);
  }
#endif
}

}  // namespace npuc::quant
