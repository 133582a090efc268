#include "quant/qparams.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {
namespace {

constexpr double kActivationLevels = kActivationQMax - kActivationQMin;  // 255 steps

void checkRange(float min, float max, const char* what) {
  if (std::isfinite(min) && std::isfinite(max) && min <= max) return;
  std::ostringstream msg;
  msg << what << ": invalid quantization range [" << min << ", " << max
      << "] (must be finite with min <= max)";
  throw ConfigError(msg.str());
}

}  // namespace

QuantParams chooseActivationParams(float min, float max, const char* what) {
  checkRange(min, max, what);
  const double lo = std::min(0.0, static_cast<double>(min));
  const double hi = std::max(0.0, static_cast<double>(max));
  double scale = (hi - lo) / kActivationLevels;
  // A scale that is zero or subnormal as a float would make x / scale overflow and the
  // requantization multipliers leave their range; such a range holds only (near) zeros.
  if (!(static_cast<float>(scale) >= std::numeric_limits<float>::min())) scale = kDegenerateRangeScale;
  const float fscale = static_cast<float>(scale);
  // The zero point is where real 0 lands; rounding it (instead of the range ends) keeps 0
  // exact and shifts the represented range by less than half a step.
  const int64_t zp =
      roundHalfAwayClamped(kActivationQMin - lo / fscale, kActivationQMin, kActivationQMax, kActivationQMin);
  return QuantParams{fscale, static_cast<int32_t>(zp)};
}

float symmetricWeightScale(float abs_max) {
  return abs_max / static_cast<float>(kWeightQMax);
}

int8_t quantizeValue(float x, QuantParams p, int32_t qmin, int32_t qmax) {
  const double scaled = static_cast<double>(x) / static_cast<double>(p.scale);
  if (std::isnan(scaled)) return static_cast<int8_t>(std::clamp(p.zero_point, qmin, qmax));
  // Clamp before adding the zero point so huge values cannot overflow the int64 conversion.
  const int64_t r = roundHalfAwayClamped(scaled, -(int64_t{1} << 40), int64_t{1} << 40, 0);
  return static_cast<int8_t>(std::clamp<int64_t>(r + p.zero_point, qmin, qmax));
}

float dequantizeValue(int8_t q, QuantParams p) {
  return p.scale * static_cast<float>(static_cast<int32_t>(q) - p.zero_point);
}

// GCC keeps this loop scalar unless told that FP operations need not trap (results are the same
// bits; only FP exception flags, which nothing reads, could differ).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-trapping-math")))
#endif
void quantizeTensor(const float* x, int64_t n, QuantParams p, int8_t* q) {
  // quantizeValue per element (test_quant_sim_kernels.cc checks it), written without the libm
  // round() call so the loop vectorizes (the simulator quantizes every graph input with it):
  // round half away from zero = trunc + (fraction >= 0.5) - (fraction <= -0.5), exact in double;
  // |scaled| beyond kSaturated ends at -128 or 127 whatever the zero point, as with the
  // reference's wider clamp.
  constexpr double kSaturated = 1024.0;
  const double scale = p.scale;
  const double zero_point = p.zero_point;
  const double lo = kActivationQMin, hi = kActivationQMax;
  // All in double (small integers are exact there) so that every step has a vector instruction.
  for (int64_t i = 0; i < n; ++i) {
    const double scaled = static_cast<double>(x[i]) / scale;
    const bool nan = scaled != scaled;
    // Ternaries, not std::min/max: GCC does not inline those into a function with its own
    // optimize attribute.
    const double v =
        nan ? 0.0 : (scaled < -kSaturated ? -kSaturated : (scaled > kSaturated ? kSaturated : scaled));
    const double whole = __builtin_trunc(v);
    const double fraction = v - whole;
    const double rounded = whole + (fraction >= 0.5 ? 1.0 : 0.0) - (fraction <= -0.5 ? 1.0 : 0.0);
    const double shifted = nan ? zero_point : rounded + zero_point;
    q[i] = static_cast<int8_t>(static_cast<int32_t>(shifted < lo ? lo : (shifted > hi ? hi : shifted)));
  }
}

void dequantizeTensor(const int8_t* q, int64_t n, QuantParams p, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = dequantizeValue(q[i], p);
}

}  // namespace npuc::quant
