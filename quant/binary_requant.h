// Integer arithmetic of the int8 ops whose inputs have different scales: Add, Mul, and the
// rescale Concat applies to each input whose scale differs from the output's. These are the
// exact formulas of docs/quantization.md; the simulator's kernels call them (or their batch
// loops) so that NPU and reference agree to the bit.
#pragma once

#include <cstdint>

#include "quant/qparams.h"
#include "quant/requant.h"

namespace npuc::quant {

// Add, as TFLite's int8 kernel structures it: both inputs are centred, shifted left by
// kAddLeftShift to keep precision, brought to a common scale 2 * max(s1, s2) by multipliers
// <= 0.5, summed exactly in int32 and requantized once to the output:
//   x_i = applyMultiplier((q_i - zp_i) << 20, s_i / (2 max(s1, s2)))
//   out = saturate_int8(applyMultiplier(x_1 + x_2, 2 max(s1, s2) / (2^20 s_out)) + zp_out)
// |q - zp| <= 255 < 2^8, so the shifted value < 2^28 and the sum < 2^29: no overflow.
constexpr int kAddLeftShift = 20;

struct AddRequant {
  int32_t zp_a = 0, zp_b = 0, zp_out = 0;
  FixedPointMultiplier a, b, out;
};
AddRequant makeAddRequant(QuantParams a, QuantParams b, QuantParams out);
int8_t addInt8(int8_t qa, int8_t qb, const AddRequant& r);

// Mul: out = saturate_int8(applyMultiplier((q_a - zp_a) * (q_b - zp_b), s_a s_b / s_out) + zp_out);
// the product is at most 255^2 in magnitude.
struct MulRequant {
  int32_t zp_a = 0, zp_b = 0, zp_out = 0;
  FixedPointMultiplier m;
};
MulRequant makeMulRequant(QuantParams a, QuantParams b, QuantParams out);
int8_t mulInt8(int8_t qa, int8_t qb, const MulRequant& r);

// Rescale (Concat inputs, any shared-scale op fed a different scale):
//   out = saturate_int8(applyMultiplier(q - zp_in, s_in / s_out) + zp_out)
// When (scale, zero point) are identical it is the identity and `identity` is set, so callers
// copy bytes instead.
struct RescaleRequant {
  int32_t zp_in = 0, zp_out = 0;
  FixedPointMultiplier m;
  bool identity = false;
};
RescaleRequant makeRescaleRequant(QuantParams in, QuantParams out);
int8_t rescaleInt8(int8_t q, const RescaleRequant& r);

}  // namespace npuc::quant
