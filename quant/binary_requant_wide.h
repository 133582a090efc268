// Element-wise ops on int16 activations (the a16 dtypes, quant/quant_scheme.h), one rounding each:
//
//   Add     y = sat16(round_half_away(((q_a - z_a) m_a + (q_b - z_b) m_b) / 2^S) + z_y),
//           m_a = round(s_a / s_y * 2^S), m_b = round(s_b / s_y * 2^S), S chosen so that the larger
//           multiplier lies in [2^30, 2^31) (both share S, so the sum is rounded once);
//   Mul     y = requantizeToInt16((q_a - z_a)(q_b - z_b), s_a s_b / s_y, z_y);
//   rescale y = requantizeToInt16(q - z_in, s_in / s_out, z_out) (Concat inputs on another grid).
// The int64 products stay below 2^49 (|q - z| <= 65535, m < 2^31); the rounding runs in 128 bits.
#pragma once

#include <cstdint>

#include "quant/qparams.h"
#include "quant/requant.h"

namespace npuc::quant {

struct WideAddRequant {
  int64_t multiplier_a = 0, multiplier_b = 0;
  int32_t shift = 1;  // S, in [1, 126]
  int32_t zero_point_a = 0, zero_point_b = 0, zero_point_out = 0;
};

// Throws ConfigError naming `what` when s_a / s_y or s_b / s_y is not finite and positive or
// reaches 2^30 (inconsistent scales).
WideAddRequant makeWideAddRequant(QuantParams a, QuantParams b, QuantParams out, const char* what = "Add");
int16_t addInt16(int16_t a, int16_t b, const WideAddRequant& r);

struct WideMulRequant {
  FixedPointMultiplier multiplier;
  int32_t zero_point_a = 0, zero_point_b = 0, zero_point_out = 0;
};
WideMulRequant makeWideMulRequant(QuantParams a, QuantParams b, QuantParams out, const char* what = "Mul");
int16_t mulInt16(int16_t a, int16_t b, const WideMulRequant& r);

struct WideRescale {
  bool identity = false;  // same parameters: the value is copied
  FixedPointMultiplier multiplier;
  int32_t zero_point_in = 0, zero_point_out = 0;
};
WideRescale makeWideRescale(QuantParams in, QuantParams out, const char* what = "Concat");
int16_t rescaleInt16(int16_t q, const WideRescale& r);

}  // namespace npuc::quant
