// Branch-free float math for the activation kernels (exp, sigmoid, tanh, erf).
//
// libm's expf/tanhf are scalar calls that stop GCC from vectorizing a loop (without -ffast-math),
// and activations like Sigmoid, SiLU, Softmax and GELU spend nearly all their time in them. The
// functions here are written with selects instead of branches so `for (i) y[i] = f(x[i])`
// vectorizes at -O3. Accuracy is within a few ulp of libm over the whole float range, well inside
// the 1e-4 relative tolerance npuc promises against ONNX Runtime (which uses similar
// approximations in MLAS).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace npuc {
namespace ew {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// e^x. Range reduction x = n*ln2 + r with |r| <= ln2/2, then a degree-6 minimax polynomial for
// e^r (the classic Cephes expf coefficients, ~1 ulp) and a scale by 2^n built in the exponent bits.
inline float fastExp(float x) {
  // Beyond these e^x is inf / below the smallest normal float (denormal results flush to 0).
  constexpr float kOverflow = 88.72283905f;    // ln(FLT_MAX)
  constexpr float kUnderflow = -87.33654475f;  // ln(FLT_MIN)
  constexpr float kLog2e = 1.44269504088896341f;
  // ln2 split in a part exact in float and a remainder, so n*ln2 is subtracted without rounding.
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding 1.5*2^23 rounds a float in (-2^22, 2^22) to an integer held in the low mantissa bits.
  constexpr float kRoundMagic = 12582912.0f;

  // Ternaries rather than fmin/fmax: they map to maxps/minps and keep the loop vectorizable.
  float xc = x < kUnderflow ? kUnderflow : x;
  xc = xc > kOverflow ? kOverflow : xc;
  const float t = xc * kLog2e + kRoundMagic;
  const float n = t - kRoundMagic;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = (p * r) * r + r + 1.0f;
  // n is in [-126, 128] but a normal float exponent only reaches [-126, 127]: build 2^n as
  // 2^(n-1) * 2 for positive n and as 2^(n+1) / 2 otherwise, so both ends stay representable.
  const int32_t ni = static_cast<int32_t>(floatToBits(t) - floatToBits(kRoundMagic));
  const bool positive = ni > 0;
  const int32_t biased = ni + (positive ? 126 : 128);  // IEEE bias 127, shifted by the -1 / +1
  const float scale = bitsToFloat(static_cast<uint32_t>(biased) << 23);
  float y = er * scale * (positive ? 2.0f : 0.5f);
  y = x < kUnderflow ? 0.0f : y;
  y = x > kOverflow ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;  // NaN propagates
}

// 1 / (1 + e^-x); saturates cleanly to 0 and 1.
inline float fastSigmoid(float x) {
  return 1.0f / (1.0f + fastExp(-x));
}

// tanh(x). Small |x| uses an odd polynomial (the e^x form would lose digits to cancellation
// there); larger |x| uses 1 - 2 / (e^(2|x|) + 1) with the sign restored.
inline float fastTanh(float x) {
  constexpr float kPolyLimit = 0.625f;  // where the Cephes tanhf polynomial is accurate
  const float ax = std::fabs(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float big = 1.0f - 2.0f / (fastExp(2.0f * ax) + 1.0f);
  return ax < kPolyLimit ? small : std::copysign(big, x);
}

namespace detail {

// Below this |x| erf uses its Taylor series (accurate relative to the small result); above it,
// 1 - erfc, where the erfc fit is accurate.
constexpr float kErfSeriesLimit = 0.5f;

// erf(x) for |x| < kErfSeriesLimit: 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320);
// the next term is below 3e-8 relative there.
inline float erfSeries(float x) {
  constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
  const float z = x * x;
  float p = -1.0f / 1320.0f;
  p = p * z + 1.0f / 216.0f;
  p = p * z - 1.0f / 42.0f;
  p = p * z + 1.0f / 10.0f;
  p = p * z - 1.0f / 3.0f;
  p = p * z + 1.0f;
  return kTwoOverSqrtPi * x * p;
}

// erfc(a) for a >= 0 as t * exp(-a^2 + P(t)), t = 1 / (1 + a/2): the Chebyshev fit published in
// Numerical Recipes (fractional error < 1.2e-7 in exact arithmetic; in float the rounding of a^2
// inside exp adds up to ~8e-6 relative for a near 9, where erfc is ~1e-37).
inline float erfcNonNegative(float a) {
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * fastExp(p - a * a);
}

}  // namespace detail

// erf(x), within ~2e-7 absolute and 1e-6 relative of libm over the whole float range.
inline float fastErf(float x) {
  const float ax = std::fabs(x);
  const float series = detail::erfSeries(x);
  const float tail = std::copysign(1.0f - detail::erfcNonNegative(ax), x);
  return ax < detail::kErfSeriesLimit ? series : tail;
}

// 1 + erf(x), accurate relative to the result also where erf(x) is close to -1 (there it is
// erfc(|x|), which a plain 1 + erf would lose to cancellation). This is GELU's core.
inline float fastOnePlusErf(float x) {
  const float ax = std::fabs(x);
  const float erfc = detail::erfcNonNegative(ax);
  const float tail = x > 0.0f ? 2.0f - erfc : erfc;
  return ax < detail::kErfSeriesLimit ? 1.0f + detail::erfSeries(x) : tail;
}

}  // namespace ew
}  // namespace npuc
