// Integer ranges of the INT8 convention and the saturating conversions every quantized kernel
// uses. Kept in one place so the reference path, the fast path and the tables cannot disagree
// on where a value clips.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace npuc::quant {

// Activations: asymmetric int8 over the full range.
constexpr int32_t kActivationQMin = -128;
constexpr int32_t kActivationQMax = 127;
// Weights: symmetric int8 without -128, so that negating a weight can never overflow and the
// grid is the same on both sides of zero.
constexpr int32_t kWeightQMax = 127;
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

// The int32 accumulator of an int8 multiply-accumulate holds bias + sum_k (q_x - z_x) * q_w[k].
// Each simulator path bounds every partial sum by |bias| + kAccumulatorTermBound * sum_k |q_w[k]|:
// the GEMM path adds u8 (q_x + 128) * q_w to a bias folded with -(z_x + 128) * sum q_w, each
// factor up to 255; the depthwise and linear paths stay within half of that. The bound depends
// on the real weights, not on the reduction length alone: 192 or 25 int8 products never
// overflow int32, a bias at a tiny weight scale can.
constexpr int64_t kAccumulatorTermBound = 2 * 255;

// What is left of the int32 range for a channel's bias once its products are accounted for;
// not positive when the products alone could overflow.
inline int64_t biasHeadroom(int64_t weight_abs_sum) {
  return int64_t{std::numeric_limits<int32_t>::max()} - kAccumulatorTermBound * weight_abs_sum;
}

inline int8_t saturateToInt8(int64_t v) {
  return static_cast<int8_t>(std::clamp<int64_t>(v, kActivationQMin, kActivationQMax));
}

inline int32_t saturateToInt32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, kInt32Min, kInt32Max));
}

// Rounds a double to the nearest integer, ties away from zero (std::round's rule), and clamps
// to [lo, hi]. NaN maps to `nan_value`; +-inf clamp like any large value. Working in double
// keeps float inputs exact until the single rounding step.
inline int64_t roundHalfAwayClamped(double v, int64_t lo, int64_t hi, int64_t nan_value) {
  if (std::isnan(v)) return nan_value;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(std::round(v));
}

}  // namespace npuc::quant
