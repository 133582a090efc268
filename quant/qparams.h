// Quantization parameters of one tensor and the float <-> int8 conversions that define them:
//   real = scale * (q - zero_point)
// Activations are asymmetric int8 per tensor; weights are symmetric int8 (zero_point 0,
// q in [-127, 127]) per output channel or per tensor (weight_quant.h applies them).
#pragma once

#include <cstdint>

namespace npuc::quant {

struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// Scale used when a range carries no information (all-zero tensor): any positive scale
// represents it exactly, and 1.0 keeps every derived multiplier well inside its valid range.
constexpr float kDegenerateRangeScale = 1.0f;

// Asymmetric int8 parameters for the real range [min, max]. The range is first widened to
// include 0, so that 0 (padding, ReLU floor) is exactly representable by the integer
// zero_point. A range narrower than what a float scale can express, or an all-zero one, gets
// kDegenerateRangeScale. Throws ConfigError on NaN/inf or min > max; `what` names the tensor.
QuantParams chooseActivationParams(float min, float max, const char* what = "activation");

// Symmetric weight scale for max|w| = `abs_max`: abs_max / 127. Zero abs_max returns 0, which
// callers replace (weight_quant.cpp decides what a dead channel borrows).
float symmetricWeightScale(float abs_max);

// q = saturate(round_half_away(x / scale) + zero_point) to [qmin, qmax]; NaN maps to the zero
// point (real 0). Division is done in double so the only rounding is the final one.
int8_t quantizeValue(float x, QuantParams p, int32_t qmin = -128, int32_t qmax = 127);
float dequantizeValue(int8_t q, QuantParams p);

void quantizeTensor(const float* x, int64_t n, QuantParams p, int8_t* q);
void dequantizeTensor(const int8_t* q, int64_t n, QuantParams p, float* x);

}  // namespace npuc::quant
