#include "quant/sim/requant_row.h"

#include <algorithm>

#include "quant/int_limits.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
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

// Magnitudes |acc| >= clamp give |acc * M| >= 512, which saturates the int8 output whatever the
// zero point (|z_out| <= 128); clamping the magnitude there first keeps every rounded value below
// 2^31, so the two int64 halves narrow to one int32 vector and the saturating int32 -> int8
// narrowing does the final clamp. With m in [2^30, 2^31), clamp = 2^(r-21) gives
// clamp * m / 2^r in [512, 1024); r <= 21 means M >= 512 already (clamp 1), and the clamp never
// needs to exceed 2^31, the largest |acc|. A shift, not a division: it is made per row per tile.
inline uint32_t saturatingMagnitude(FixedPointMultiplier m) {
  constexpr int kSaturatingLog2 = 9;   // |x| >= 2^9 = 512 saturates
  constexpr int kQ31Low = 30;          // m >= 2^30
  constexpr int kLargestLog2 = 31;     // |acc| <= 2^31
  const int log2_clamp = std::clamp(m.rightShift() + kSaturatingLog2 - kQ31Low, 0, kLargestLog2);
  return uint32_t{1} << log2_clamp;
}

// One row with the row-independent constants already in registers. Per 16 accumulators: the
// sign, the clamped magnitude |acc + bias| (unsigned: |INT32_MIN| = 2^31 is exact), its exact
// 64-bit product with m in two halves, + 2^(r-1) and a logical shift (round half up of the
// magnitude = half away from zero, as applyMultiplier), the sign restored, + z_out, and the
// saturating narrowing to int8.
inline void requantizeRowAvx512(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                                __m512i zero_point, int8_t* out) {
  constexpr int64_t kLanes = 16;
  const __m512i multiplier = _mm512_set1_epi64(m.multiplier);
  const __m512i offset = _mm512_set1_epi64(int64_t{1} << (m.rightShift() - 1));
  const __m128i right_shift = _mm_cvtsi32_si128(m.rightShift());
  const __m512i bias_v = _mm512_set1_epi32(bias);
  const __m512i clamp = _mm512_set1_epi32(static_cast<int32_t>(saturatingMagnitude(m)));
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 lanes = n - i >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i a = _mm512_add_epi32(_mm512_maskz_loadu_epi32(lanes, acc + i), bias_v);
    const __mmask16 negative = _mm512_movepi32_mask(a);
    const __m512i magnitude = _mm512_min_epu32(_mm512_abs_epi32(a), clamp);
    // _mm512_mul_epu32 multiplies the low uint32 of each 64-bit lane: the even accumulators
    // directly, the odd ones after shifting them down.
    const __m512i even =
        _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(magnitude, multiplier), offset), right_shift);
    const __m512i odd = _mm512_srl_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(magnitude, 32), multiplier), offset), right_shift);
    const __m512i rounded = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_slli_epi64(odd, 32));
    const __m512i signed_rounded = _mm512_mask_sub_epi32(rounded, negative, _mm512_setzero_si512(), rounded);
    // Narrow in a register, then store: a masked narrowing store to memory is slow on AMD Zen 4.
    const __m128i bytes = _mm512_cvtsepi32_epi8(_mm512_add_epi32(signed_rounded, zero_point));
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
  const __m512i zero_point = _mm512_set1_epi32(output_zero_point);
  for (int64_t r = 0; r < rows; ++r) {
    if (multipliers[r].isZero()) {
      requantizeRowScalar(acc + r * acc_stride, n, biases[r], multipliers[r], output_zero_point,
                          out + r * out_stride);
    } else {
      requantizeRowAvx512(acc + r * acc_stride, n, biases[r], multipliers[r], zero_point, out + r * out_stride);
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
