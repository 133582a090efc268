// The AVX-512 core of the requantizations, on 16 int32 lanes in a register: what
// requantizeRowsToInt8 (requant_row.h) runs per vector, what the fused depthwise kernel runs on
// accumulators that never leave registers, and the Add's input rescaling. Bit-identical to
// applyMultiplier / requantizeToInt8.
#pragma once
#include <algorithm>
#include <cstdint>

#include "quant/requant.h"

namespace npuc::quant {

// Magnitudes |acc| >= this give |acc * M| >= 512, which saturates the int8 output whatever the
// zero point (|z_out| <= 128); clamping the magnitude there first keeps every rounded value
// below 2^31, so the vector requantization works in one int32 vector and the saturating
// int32 -> int8 narrowing does the final clamp. With m in [2^30, 2^31), 2^(r-21) gives
// clamp * m / 2^r in [512, 1024); r <= 21 means M >= 512 already (clamp 1), and the clamp never
// needs to exceed 2^31, the largest |acc|.
inline uint32_t requantMagnitudeClamp(FixedPointMultiplier m) {
  constexpr int kSaturatingLog2 = 9;  // |x| >= 2^9 = 512 saturates
  constexpr int kQ31Low = 30;         // m >= 2^30
  constexpr int kLargestLog2 = 31;    // |acc| <= 2^31
  return uint32_t{1} << std::clamp(m.rightShift() + kSaturatingLog2 - kQ31Low, 0, kLargestLog2);
}

// One output channel's requantization as a GEMM epilogue reads it: the (folded) bias, the
// multiplier, and the constants the vector form broadcasts, derived once per layer: per row of
// every tile they cost about a third of a 3x3 conv's epilogue.
struct ChannelRequant {
  int32_t bias = 0;
  FixedPointMultiplier multiplier;
  uint32_t clamp = 1;        // requantMagnitudeClamp
  int64_t round_offset = 0;  // 2^(r-1), r = multiplier.rightShift()
  int64_t right_shift = 0;   // r

  ChannelRequant() = default;
  ChannelRequant(int32_t b, FixedPointMultiplier m)
      : bias(b),
        multiplier(m),
        clamp(requantMagnitudeClamp(m)),
        round_offset(m.isZero() ? 0 : int64_t{1} << (m.rightShift() - 1)),
        right_shift(m.rightShift()) {}
};

}  // namespace npuc::quant

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>
#define NPUC_REQUANT_AVX512 1

namespace npuc::quant {

// applyMultiplier on 16 int32 lanes given as magnitude and sign: round half away from zero of
// |a| * m / 2^r, the sign restored. Exact while |a| * m + 2^(r-1) < 2^64 and the result fits
// int32 (callers bound |a|). One multiplier for every lane (a row's), or one per lane (the wide
// tile's 16 output channels). No m may be zero (callers take the scalar path then).
struct MultiplierVector {
  // _mm512_mul_epu32 multiplies the low uint32 of each 64-bit lane, so the constants are kept
  // per parity of the int32 lane: [0] for lanes 0, 2, ..., 14 and [1] for 1, 3, ..., 15.
  __m512i multiplier[2], offset[2], right_shift[2];

  explicit MultiplierVector(FixedPointMultiplier m) : MultiplierVector(ChannelRequant(0, m)) {}
  explicit MultiplierVector(const ChannelRequant& c) {
    multiplier[0] = multiplier[1] = _mm512_set1_epi64(c.multiplier.multiplier);
    offset[0] = offset[1] = _mm512_set1_epi64(c.round_offset);
    right_shift[0] = right_shift[1] = _mm512_set1_epi64(c.right_shift);
  }
  explicit MultiplierVector(const ChannelRequant* lanes) {
    alignas(64) int64_t mult[2][8], off[2][8], shift[2][8];
    for (int i = 0; i < 16; ++i) {
      mult[i % 2][i / 2] = lanes[i].multiplier.multiplier;
      off[i % 2][i / 2] = lanes[i].round_offset;
      shift[i % 2][i / 2] = lanes[i].right_shift;
    }
    for (int parity = 0; parity < 2; ++parity) {
      multiplier[parity] = _mm512_load_si512(mult[parity]);
      offset[parity] = _mm512_load_si512(off[parity]);
      right_shift[parity] = _mm512_load_si512(shift[parity]);
    }
  }

  // `magnitude` is unsigned (|INT32_MIN| = 2^31 is exact). The odd lanes are shifted down into
  // the low halves first; + 2^(r-1) and a logical shift round the magnitude half up, i.e. half
  // away from zero.
  __m512i apply(__m512i magnitude, __mmask16 negative) const {
    const __m512i even = _mm512_srlv_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(magnitude, multiplier[0]), offset[0]), right_shift[0]);
    const __m512i odd = _mm512_srlv_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(magnitude, 32), multiplier[1]), offset[1]),
        right_shift[1]);
    const __m512i rounded = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_slli_epi64(odd, 32));
    return _mm512_mask_sub_epi32(rounded, negative, _mm512_setzero_si512(), rounded);
  }
  // The same on signed lanes whose magnitude keeps the result in int32 without a clamp.
  __m512i apply(__m512i a) const { return apply(_mm512_abs_epi32(a), _mm512_movepi32_mask(a)); }
};

// Requantization constants of one multiplier (a row's) or of one per lane, and the output zero
// point, broadcast once.
struct RequantVector {
  MultiplierVector multiply;
  __m512i clamp, zero_point;

  // The magnitude clamp: requantMagnitudeClamp.
  RequantVector(FixedPointMultiplier m, int32_t output_zero_point)
      : RequantVector(ChannelRequant(0, m), output_zero_point) {}
  // A channel's precomputed constants: broadcasts from memory, no arithmetic.
  RequantVector(const ChannelRequant& c, int32_t output_zero_point)
      : multiply(c),
        clamp(_mm512_set1_epi32(static_cast<int32_t>(c.clamp))),
        zero_point(_mm512_set1_epi32(output_zero_point)) {}
  // 16 lanes, lane i with lanes[i].
  RequantVector(const ChannelRequant* lanes, int32_t output_zero_point)
      : multiply(lanes), zero_point(_mm512_set1_epi32(output_zero_point)) {
    alignas(64) uint32_t c[16];
    for (int i = 0; i < 16; ++i) c[i] = lanes[i].clamp;
    clamp = _mm512_load_si512(c);
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
