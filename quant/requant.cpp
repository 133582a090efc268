#include "quant/requant.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {
namespace {

constexpr int kQ31FractionBits = 31;

// 2^(r-1): adding it to a non-negative value before an r-bit right shift rounds half up, which
// on the magnitude is half away from zero.
inline int64_t roundingOffset(int32_t right_shift) {
  return int64_t{1} << (right_shift - 1);
}

[[noreturn]] void throwBadMultiplier(double real, const char* what, const char* why) {
  std::ostringstream msg;
  msg.precision(17);
  msg << what << ": real multiplier " << real << " " << why;
  throw ConfigError(msg.str());
}

}  // namespace

double FixedPointMultiplier::value() const {
  return std::ldexp(static_cast<double>(multiplier), shift - kQ31FractionBits);
}

FixedPointMultiplier quantizeMultiplier(double real, const char* what, int32_t min_shift) {
  if (!std::isfinite(real) || real <= 0.0) throwBadMultiplier(real, what, "must be finite and > 0");
  int exponent = 0;
  // real = fraction * 2^exponent with fraction in [0.5, 1): exact, no rounding yet.
  const double fraction = std::frexp(real, &exponent);
  int64_t q31 = std::llround(std::ldexp(fraction, kQ31FractionBits));
  if (q31 == (int64_t{1} << kQ31FractionBits)) {
    // The fraction rounded up to 1.0: renormalize to 0.5 * 2^(exponent+1).
    q31 >>= 1;
    ++exponent;
  }
  if (exponent > kMaxMultiplierShift) throwBadMultiplier(real, what, "is >= 2^30 (scales are inconsistent)");
  // Below 2^-33, |acc| * M < 2^31 * 2^-33 = 0.25 for every int32 acc, so the result is always 0
  // (min_shift = kMinMultiplierShift; the wide accumulators' floor is lower, requant_wide.h).
  if (exponent < min_shift) return FixedPointMultiplier{0, 0};
  return FixedPointMultiplier{static_cast<int32_t>(q31), exponent};
}

int32_t applyMultiplier(int32_t acc, FixedPointMultiplier m) {
  if (m.isZero()) return 0;
  // |acc * m| <= 2^31 * (2^31 - 1) < 2^62: exact in int64, and so is its magnitude.
  const int64_t product = static_cast<int64_t>(acc) * m.multiplier;
  const int32_t right_shift = m.rightShift();  // in [1, 63]
  const int64_t magnitude = product < 0 ? -product : product;
  // magnitude + 2^62 < 2^63: the rounding offset cannot overflow even for right_shift = 63.
  const int64_t rounded = (magnitude + roundingOffset(right_shift)) >> right_shift;
  return saturateToInt32(product < 0 ? -rounded : rounded);
}

int8_t requantizeToInt8(int32_t acc, FixedPointMultiplier m, int32_t output_zero_point) {
  return saturateToInt8(static_cast<int64_t>(applyMultiplier(acc, m)) + output_zero_point);
}

namespace {

// One element of the batch path: the same arithmetic as applyMultiplier, written with masks
// instead of branches (sign = 0 or -1; (x ^ sign) - sign negates x when sign = -1), and a
// logical shift of a non-negative value, which SIMD units have for 64-bit lanes.
inline int64_t applyMultiplierBranchFree(int32_t acc, int64_t multiplier, int32_t right_shift,
                                         uint64_t offset) {
  const int64_t product = static_cast<int64_t>(acc) * multiplier;
  const int64_t sign = -static_cast<int64_t>(product < 0);
  const uint64_t magnitude = static_cast<uint64_t>((product ^ sign) - sign);
  const int64_t rounded = static_cast<int64_t>((magnitude + offset) >> right_shift);
  return (rounded ^ sign) - sign;
}

}  // namespace

void applyMultiplierBatch(const int32_t* acc, int64_t n, FixedPointMultiplier m, int32_t* out) {
  if (m.isZero()) {
    for (int64_t i = 0; i < n; ++i) out[i] = 0;
    return;
  }
  const int32_t right_shift = m.rightShift();
  const uint64_t offset = static_cast<uint64_t>(roundingOffset(right_shift));
  const int64_t multiplier = m.multiplier;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = applyMultiplierBranchFree(acc[i], multiplier, right_shift, offset);
    out[i] = static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(v, kInt32Min), kInt32Max));
  }
}

void requantizeToInt8Batch(const int32_t* acc, int64_t n, FixedPointMultiplier m, int32_t output_zero_point,
                           int8_t* out) {
  if (m.isZero()) {
    const int8_t zero = saturateToInt8(output_zero_point);
    for (int64_t i = 0; i < n; ++i) out[i] = zero;
    return;
  }
  const int32_t right_shift = m.rightShift();
  const uint64_t offset = static_cast<uint64_t>(roundingOffset(right_shift));
  const int64_t multiplier = m.multiplier;
  const int64_t zp = output_zero_point;
  for (int64_t i = 0; i < n; ++i) {
    // Same order as the reference: saturate to int32, add the zero point, saturate to int8.
    int64_t v = applyMultiplierBranchFree(acc[i], multiplier, right_shift, offset);
    v = std::min<int64_t>(std::max<int64_t>(v, kInt32Min), kInt32Max) + zp;
    out[i] = static_cast<int8_t>(std::min<int64_t>(std::max<int64_t>(v, kActivationQMin), kActivationQMax));
  }
}

void requantizeToInt8PerChannel(const int32_t* acc, int64_t outer, int64_t channels, int64_t inner,
                                const FixedPointMultiplier* multipliers, int32_t output_zero_point,
                                int8_t* out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (o * channels + c) * inner;
      requantizeToInt8Batch(acc + base, inner, multipliers[c], output_zero_point, out + base);
    }
  }
}

}  // namespace npuc::quant
