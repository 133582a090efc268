#include "quant/scheme_qparams.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {

namespace {

void checkRange(float min, float max, const char* what) {
  if (std::isfinite(min) && std::isfinite(max) && min <= max) return;
  std::ostringstream msg;
  msg << what << ": invalid quantization range [" << min << ", " << max
      << "] (must be finite with min <= max)";
  throw ConfigError(msg.str());
}

}  // namespace

float powerOfTwoAtLeast(double s) {
  int exponent = 0;
  const double fraction = std::frexp(s, &exponent);  // s = fraction * 2^exponent, fraction in [0.5, 1)
  // An exact power of two (fraction 0.5) is its own bound; anything above rounds up.
  return static_cast<float>(fraction == 0.5 ? std::ldexp(1.0, exponent - 1) : std::ldexp(1.0, exponent));
}

QuantParams chooseSchemeActivationParams(float min, float max, const QuantScheme& scheme, const char* what) {
  if (scheme.activation_bits == 8 && !scheme.power_of_two_scales)
    return chooseActivationParams(min, max, what);
  checkRange(min, max, what);
  const double qmin = scheme.activationMin(), qmax = scheme.activationMax();
  const double lo = std::min(0.0, static_cast<double>(min));
  const double hi = std::max(0.0, static_cast<double>(max));
  if (scheme.power_of_two_scales) {
    const double bound = std::max(-lo, hi) / qmax;
    if (!(bound >= std::numeric_limits<float>::min())) return QuantParams{kDegenerateRangeScale, 0};
    return QuantParams{powerOfTwoAtLeast(bound), 0};
  }
  double scale = (hi - lo) / (qmax - qmin);
  if (!(static_cast<float>(scale) >= std::numeric_limits<float>::min())) scale = kDegenerateRangeScale;
  const float fscale = static_cast<float>(scale);
  const int64_t zp = roundHalfAwayClamped(qmin - lo / fscale, static_cast<int64_t>(qmin),
                                          static_cast<int64_t>(qmax), static_cast<int64_t>(qmin));
  return QuantParams{fscale, static_cast<int32_t>(zp)};
}

float schemeWeightScale(float abs_max, const QuantScheme& scheme) {
  const float s = abs_max / static_cast<float>(scheme.weightMax());
  if (!scheme.power_of_two_scales || !(s >= std::numeric_limits<float>::min())) return s;
  return powerOfTwoAtLeast(s);
}

int32_t quantizeValueWide(float x, QuantParams p, int32_t qmin, int32_t qmax) {
  const double scaled = static_cast<double>(x) / static_cast<double>(p.scale);
  if (std::isnan(scaled)) return std::clamp(p.zero_point, qmin, qmax);
  const int64_t r = roundHalfAwayClamped(scaled, -(int64_t{1} << 40), int64_t{1} << 40, 0);
  return static_cast<int32_t>(std::clamp<int64_t>(r + p.zero_point, qmin, qmax));
}

void quantizeTensorInt16(const float* x, int64_t n, QuantParams p, int16_t* q) {
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int16_t>(quantizeValueWide(x[i], p, -32768, 32767));
}

void dequantizeTensorInt16(const int16_t* q, int64_t n, QuantParams p, float* x) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = p.scale * static_cast<float>(static_cast<int32_t>(q[i]) - p.zero_point);
}

}  // namespace npuc::quant
