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

// Eight accumulators (sign-extended to 64-bit lanes) -> eight int8 outputs. Same arithmetic as
// applyMultiplier: |acc * m| < 2^62 exact in int64, + 2^(r-1), logical shift right by r, sign
// restored. Saturating to int32, adding z_out and saturating to int8 equals clamping
// (rounded + z_out) to [-128, 127] directly, since |z_out| <= 128 and int32 saturation only
// matters far outside the int8 range.
inline __m128i requantizeEight(__m512i acc64, __m512i multiplier, __m512i offset, __m128i right_shift,
                               __m512i zero_point, __m512i lo, __m512i hi) {
  const __m512i product = _mm512_mul_epi32(acc64, multiplier);  // low 32 bits of each lane, signed
  const __mmask8 negative = _mm512_cmplt_epi64_mask(product, _mm512_setzero_si512());
  const __m512i magnitude = _mm512_abs_epi64(product);
  const __m512i rounded = _mm512_srl_epi64(_mm512_add_epi64(magnitude, offset), right_shift);
  const __m512i signed_rounded = _mm512_mask_sub_epi64(rounded, negative, _mm512_setzero_si512(), rounded);
  const __m512i shifted = _mm512_add_epi64(signed_rounded, zero_point);
  return _mm512_cvtepi64_epi8(_mm512_min_epi64(_mm512_max_epi64(shifted, lo), hi));
}

#endif

}  // namespace

void requantizeRowToInt8(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out) {
#ifdef NPUC_REQUANT_AVX512
  if (m.isZero()) {
    requantizeRowScalar(acc, n, bias, m, output_zero_point, out);
    return;
  }
  constexpr int64_t kLanes = 16;
  const __m512i multiplier = _mm512_set1_epi64(m.multiplier);
  const __m512i offset = _mm512_set1_epi64(int64_t{1} << (m.rightShift() - 1));
  const __m128i right_shift = _mm_cvtsi32_si128(m.rightShift());
  const __m512i zero_point = _mm512_set1_epi64(output_zero_point);
  const __m512i lo = _mm512_set1_epi64(kActivationQMin), hi = _mm512_set1_epi64(kActivationQMax);
  const __m512i bias_v = _mm512_set1_epi32(bias);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512i a = _mm512_add_epi32(_mm512_loadu_si512(acc + i), bias_v);
    const __m512i low = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a));
    const __m512i high = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1));
    const __m128i r0 = requantizeEight(low, multiplier, offset, right_shift, zero_point, lo, hi);
    const __m128i r1 = requantizeEight(high, multiplier, offset, right_shift, zero_point, lo, hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi64(r0, r1));
  }
  requantizeRowScalar(acc + i, n - i, bias, m, output_zero_point, out + i);
#else
  requantizeRowScalar(acc, n, bias, m, output_zero_point, out);
#endif
}

}  // namespace npuc::quant
