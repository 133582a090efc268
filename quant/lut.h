// 256-entry int8 -> int8 lookup tables for element-wise non-linearities. An int8 input has only
// 256 possible values, so evaluating the real function once per value (in double) and
// requantizing it is both exact to the convention and the fastest possible kernel: the NPU
// and the simulator just index the table.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "quant/qparams.h"

namespace npuc::quant {

enum class LutFunction { Sigmoid, Tanh, SiLU, HardSwish, GELU, Exp };

// Table indexed by the input's bit pattern as uint8: entry (q + 128) holds f(q).
using Int8Lut = std::array<int8_t, 256>;

// Maps an ONNX op type ("Sigmoid", "Tanh", "Silu"/"SiLU", "HardSwish", "Gelu", "Exp") to its
// function; throws UnsupportedOpError for anything else.
LutFunction lutFunctionFromOpType(const std::string& op_type);
const char* lutFunctionName(LutFunction f);
// The real function a table samples (double precision).
double evaluateLutFunction(LutFunction f, double x);

// entry(q) = saturate(round_half_away(f(in.scale * (q - in.zero_point)) / out.scale) + out.zp).
Int8Lut buildLut(LutFunction f, QuantParams in, QuantParams out);
Int8Lut buildLut(const std::function<double(double)>& f, QuantParams in, QuantParams out);

inline int8_t lookupLut(const Int8Lut& lut, int8_t q) {
  return lut[static_cast<uint8_t>(q + 128)];
}
void applyLut(const Int8Lut& lut, const int8_t* in, int64_t n, int8_t* out);

}  // namespace npuc::quant
