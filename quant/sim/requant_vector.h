// The AVX-512 core of the requantizations, on 16 int32 lanes in a register: what
// requantizeRowsToInt8 (requant_row.h) runs per vector, what the fused depthwise kernel runs on
// accumulators that never leave registers, and the Add's input rescaling. Bit-identical to
// applyMultiplier / requantizeToInt8.
#pragma once
#include <algorithm>
#include <cstdint>

#include "quant/requant.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>
#define NPUC_REQUANT_AVX512 1

namespace npuc::quant {

// applyMultiplier on 16 int32 lanes given as magnitude and sign: round half away from zero of
// |a| * m / 2^r, the sign restored. Exact while |a| * m + 2^(r-1) < 2^64 and the result fits
// int32 (callers bound |a|). m must not be zero (callers take the scalar path then).
struct MultiplierVector {
  __m512i multiplier, offset;
  __m128i right_shift;

  explicit MultiplierVector(FixedPointMultiplier m)
      : multiplier(_mm512_set1_epi64(m.multiplier)),
        offset(_mm512_set1_epi64(int64_t{1} << (m.rightShift() - 1))),
        right_shift(_mm_cvtsi32_si128(m.rightShift())) {}

  // `magnitude` is unsigned (|INT32_MIN| = 2^31 is exact). _mm512_mul_epu32 multiplies the low
  // uint32 of each 64-bit lane: the even lanes directly, the odd ones after shifting them down;
  // + 2^(r-1) and a logical shift round the magnitude half up, i.e. half away from zero.
  __m512i apply(__m512i magnitude, __mmask16 negative) const {
    const __m512i even =
        _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(magnitude, multiplier), offset), right_shift);
    const __m512i odd = _mm512_srl_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(magnitude, 32), multiplier), offset),
        right_shift);
    const __m512i rounded = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_slli_epi64(odd, 32));
    return _mm512_mask_sub_epi32(rounded, negative, _mm512_setzero_si512(), rounded);
  }
  // The same on signed lanes whose magnitude keeps the result in int32 without a clamp.
  __m512i apply(__m512i a) const { return apply(_mm512_abs_epi32(a), _mm512_movepi32_mask(a)); }
};

// Row constants of one multiplier and output zero point, broadcast once.
struct RequantVector {
  MultiplierVector multiply;
  __m512i clamp, zero_point;

  // Magnitudes |acc| >= clamp give |acc * M| >= 512, which saturates the int8 output whatever
  // the zero point (|z_out| <= 128); clamping the magnitude there first keeps every rounded value
  // below 2^31, so the result is one int32 vector and the saturating int32 -> int8 narrowing does
  // the final clamp. With m in [2^30, 2^31), clamp = 2^(r-21) gives clamp * m / 2^r in
  // [512, 1024); r <= 21 means M >= 512 already (clamp 1), and the clamp never needs to exceed
  // 2^31, the largest |acc|. A shift, not a division: it is made per row per tile.
  RequantVector(FixedPointMultiplier m, int32_t output_zero_point) : multiply(m) {
    constexpr int kSaturatingLog2 = 9;  // |x| >= 2^9 = 512 saturates
    constexpr int kQ31Low = 30;         // m >= 2^30
    constexpr int kLargestLog2 = 31;    // |acc| <= 2^31
    const int log2_clamp = std::clamp(m.rightShift() + kSaturatingLog2 - kQ31Low, 0, kLargestLog2);
    clamp = _mm512_set1_epi32(static_cast<int32_t>(uint32_t{1} << log2_clamp));
    zero_point = _mm512_set1_epi32(output_zero_point);
  }

  // requantizeToInt8 of 16 int32 lanes (acc already plus bias): the clamped magnitude times m,
  // rounded, the sign restored, + z_out, and the saturating narrowing to int8.
  __m128i operator()(__m512i a) const {
    const __m512i magnitude = _mm512_min_epu32(_mm512_abs_epi32(a), clamp);
    return _mm512_cvtsepi32_epi8(
        _mm512_add_epi32(multiply.apply(magnitude, _mm512_movepi32_mask(a)), zero_point));
  }
};

}  // namespace npuc::quant

#endif
