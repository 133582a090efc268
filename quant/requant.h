// Requantization: scaling an int32 accumulator by a real multiplier M with integer arithmetic
// only. The convention (docs/quantization.md, "Requantization"):
//
//   M  ~=  m * 2^(shift - 31),   m in [2^30, 2^31)  (a Q31 fraction in [0.5, 1))
//   apply(acc) = round_half_away_from_zero(acc * m / 2^(31 - shift)), saturated to int32
//
// computed exactly in 64-bit integers with ONE rounding. The reference (scalar) and batch
// versions below must agree to the bit; the simulator uses the batch version.
#pragma once

#include <cstdint>

namespace npuc::quant {

// A real multiplier M > 0 in fixed point. `multiplier` is 0 only for the "zero multiplier"
// (M below 2^-33, where every int32 accumulator rounds to 0 anyway); otherwise it lies in
// [2^30, 2^31). The total right shift applied to acc * multiplier is rightShift().
struct FixedPointMultiplier {
  int32_t multiplier = 0;
  int32_t shift = 0;

  int32_t rightShift() const { return 31 - shift; }
  bool isZero() const { return multiplier == 0; }
  // The real value m * 2^(shift-31) this represents (for reports and tests).
  double value() const;
};

// Largest shift: M < 2^30. A larger M saturates every non-zero accumulator, which only a broken
// scale computation produces, so it is refused rather than silently encoded.
constexpr int32_t kMaxMultiplierShift = 30;
// Smallest shift: the total right shift 31 - shift stays <= 63, so the 64-bit rounding offset
// 2^(r-1) and the shift itself stay defined.
constexpr int32_t kMinMultiplierShift = -32;

// Encodes M (finite, > 0, < 2^30). Throws ConfigError naming `what` (e.g. the node) otherwise.
// `min_shift`: below 2^min_shift M is the zero multiplier (kMinMultiplierShift for int32
// accumulators; the int64 ones of requant_wide.h pass their own floor).
FixedPointMultiplier quantizeMultiplier(double real_multiplier, const char* what = "requantization",
                                        int32_t min_shift = kMinMultiplierShift);

// Reference: acc * M rounded once, half away from zero, saturated to int32.
int32_t applyMultiplier(int32_t acc, FixedPointMultiplier m);

// Reference requantization to an int8 activation: saturate(applyMultiplier(acc) + zero_point).
int8_t requantizeToInt8(int32_t acc, FixedPointMultiplier m, int32_t output_zero_point);

// Batch versions, written branch-free so the compiler vectorizes them. Bit-identical to the
// reference functions for every input.
void applyMultiplierBatch(const int32_t* acc, int64_t n, FixedPointMultiplier m, int32_t* out);
void requantizeToInt8Batch(const int32_t* acc, int64_t n, FixedPointMultiplier m, int32_t output_zero_point,
                           int8_t* out);
// Per-channel form: element i of each of `outer` rows of `channels * inner` accumulators uses
// multiplier[(i / inner) % channels] (NCHW conv output: inner = H*W).
void requantizeToInt8PerChannel(const int32_t* acc, int64_t outer, int64_t channels, int64_t inner,
                                const FixedPointMultiplier* multipliers, int32_t output_zero_point,
                                int8_t* out);

}  // namespace npuc::quant
