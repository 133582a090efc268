#include "quant/requant_wide.h"

#include <limits>
namespace npuc::quant {

FixedPointMultiplier quantizeWideMultiplier(double real, const char* what) {
  return quantizeMultiplier(real, what, kMinWideMultiplierShift);
}

int64_t applyWideMultiplier(int64_t acc, FixedPointMultiplier m) {
  if (m.isZero()) return 0;
  // |acc * m| < 2^63 * 2^31 = 2^94: exact in 128 bits, and so is the rounding offset below.
  const __int128 product = static_cast<__int128>(acc) * m.multiplier;
  const int32_t right_shift = m.rightShift();  // in [1, 95]
  const __int128 magnitude = product < 0 ? -product : product;
  const __int128 rounded = (magnitude + (static_cast<__int128>(1) << (right_shift - 1))) >> right_shift;
  const __int128 v = product < 0 ? -rounded : rounded;
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  return v < lo ? lo : (v > hi ? hi : static_cast<int64_t>(v));
}

int16_t requantizeToInt16(int64_t acc, FixedPointMultiplier m, int32_t output_zero_point) {
  // In 128 bits: a saturated int64 plus the zero point cannot wrap.
  const __int128 v = static_cast<__int128>(applyWideMultiplier(acc, m)) + output_zero_point;
  return static_cast<int16_t>(v < -32768 ? -32768 : (v > 32767 ? 32767 : static_cast<int32_t>(v)));
}

void requantizeToInt16PerChannel(const int64_t* acc, int64_t outer, int64_t channels, int64_t inner,
                                 const FixedPointMultiplier* multipliers, int32_t output_zero_point,
                                 int16_t* out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        out[base + i] = requantizeToInt16(acc[base + i], multipliers[c], output_zero_point);
    }
  }
}

}  // namespace npuc::quant
