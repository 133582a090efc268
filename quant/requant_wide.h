// Requantization of the wide-accumulator schemes (every #17 dtype but w8a8): the int64
// accumulator of an int16 (or int4/int8 x int16) multiply-accumulate scaled by M with the same
// one-rounding fixed-point convention as quant/requant.h,
//
//   apply(acc) = round_half_away_from_zero(acc * m / 2^(31 - shift))
//
// computed exactly with a 128-bit product, then + zero point, saturated to int16. The shift range
// is wider than int8's: an int64 accumulator stays meaningful for M far below 2^-33.
#pragma once

#include <cstdint>

#include "quant/requant.h"

namespace npuc::quant {

// Below 2^-64 * 2^-31 .. : the total right shift 31 - shift stays <= 95, and for a smaller M every
// int64 accumulator (|acc| * m < 2^94) rounds to 0 anyway.
constexpr int32_t kMinWideMultiplierShift = -64;

// Encodes M (finite, > 0, < 2^30) for an int64 accumulator. Throws ConfigError naming `what`.
FixedPointMultiplier quantizeWideMultiplier(double real_multiplier, const char* what = "requantization");

// acc * M rounded once, half away from zero, saturated to int64.
int64_t applyWideMultiplier(int64_t acc, FixedPointMultiplier m);

// saturate_int16(applyWideMultiplier(acc) + zero_point): the one requantization every wide
// kernel's reference and fast path call per output element.
int16_t requantizeToInt16(int64_t acc, FixedPointMultiplier m, int32_t output_zero_point);

// Per channel over `outer` rows of `channels * inner` accumulators (NCHW: inner = H*W; a linear
// layer: outer = rows, inner = 1).
void requantizeToInt16PerChannel(const int64_t* acc, int64_t outer, int64_t channels, int64_t inner,
                                 const FixedPointMultiplier* multipliers, int32_t output_zero_point,
                                 int16_t* out);

}  // namespace npuc::quant
