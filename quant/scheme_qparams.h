// Quantization parameters and conversions of the #17 dtypes (quant/quant_scheme.h) that int8's
// qparams.h does not cover: int16 activations (asymmetric, or dynamic fixed point for
// w16a16i_dfp) and symmetric weights at 4, 8 or 16 bits. The 8-bit functions of qparams.h stay
// the w8a8 path untouched; everything here takes the scheme and reduces to them at 8 bits.
// Formats: docs/quantization.md section "Quantized dtypes".
#pragma once

#include <cstdint>

#include "quant/qparams.h"
#include "quant/quant_scheme.h"

namespace npuc::quant {

// Activation parameters of `scheme` for the real range [min, max]:
//   8 bits   chooseActivationParams (asymmetric int8);
//   16 bits  the same rule on [-32768, 32767]: range widened to 0, s = (hi - lo) / 65535, zero
//            point rounded; power_of_two_scales (dfp): zero point 0 and
//            s = 2^ceil(log2(max(|lo|, |hi|) / 32767)), so the range never clips.
// Throws ConfigError naming `what` on NaN/inf or min > max.
QuantParams chooseSchemeActivationParams(float min, float max, const QuantScheme& scheme,
                                         const char* what = "activation");

// Symmetric weight scale for max|w| = abs_max: abs_max / weightMax, rounded up to a power of two
// under power_of_two_scales. 0 for abs_max 0 (the caller decides what a dead channel borrows).
float schemeWeightScale(float abs_max, const QuantScheme& scheme);

// The smallest power of two >= s (s > 0 and normal).
float powerOfTwoAtLeast(double s);

// q = clamp(round_half_away(x / scale) + zero_point, qmin, qmax); NaN -> zero point (as
// quantizeValue, at any width up to 16 bits).
int32_t quantizeValueWide(float x, QuantParams p, int32_t qmin, int32_t qmax);

// int16 activations: the conversions of the simulator's graph boundary and FP16 fallback path.
void quantizeTensorInt16(const float* x, int64_t n, QuantParams p, int16_t* q);
void dequantizeTensorInt16(const int16_t* q, int64_t n, QuantParams p, float* x);

}  // namespace npuc::quant
