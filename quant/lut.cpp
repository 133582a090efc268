#include "quant/lut.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {
namespace {

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// ONNX HardSwish: x * max(0, min(1, x/6 + 1/2)) (alpha = 1/6, beta = 0.5).
double hardSwish(double x) {
  return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
}

// The exact (erf) GELU, which is what ONNX Gelu with approximate="none" and PyTorch's default
// compute; the tanh approximation differs by up to ~1e-3, enough to move table entries.
double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

}  // namespace

LutFunction lutFunctionFromOpType(const std::string& op_type) {
  if (op_type == "Sigmoid") return LutFunction::Sigmoid;
  if (op_type == "Tanh") return LutFunction::Tanh;
  if (op_type == "Silu" || op_type == "SiLU") return LutFunction::SiLU;
  if (op_type == "HardSwish") return LutFunction::HardSwish;
  if (op_type == "Gelu") return LutFunction::GELU;
  if (op_type == "Exp") return LutFunction::Exp;
  throw UnsupportedOpError("no int8 lookup table for op '" + op_type + "'");
}

const char* lutFunctionName(LutFunction f) {
  switch (f) {
    case LutFunction::Sigmoid: return "Sigmoid";
    case LutFunction::Tanh: return "Tanh";
    case LutFunction::SiLU: return "SiLU";
    case LutFunction::HardSwish: return "HardSwish";
    case LutFunction::GELU: return "GELU";
    case LutFunction::Exp: return "Exp";
  }
  return "?";
}

double evaluateLutFunction(LutFunction f, double x) {
  switch (f) {
    case LutFunction::Sigmoid: return sigmoid(x);
    case LutFunction::Tanh: return std::tanh(x);
    case LutFunction::SiLU: return x * sigmoid(x);
    case LutFunction::HardSwish: return hardSwish(x);
    case LutFunction::GELU: return gelu(x);
    case LutFunction::Exp: return std::exp(x);
  }
  throw Error("evaluateLutFunction: unknown LutFunction");
}

Int8Lut buildLut(LutFunction f, QuantParams in, QuantParams out) {
  return buildLut([f](double x) { return evaluateLutFunction(f, x); }, in, out);
}

Int8Lut buildLut(const std::function<double(double)>& f, QuantParams in, QuantParams out) {
  Int8Lut lut{};
  for (int32_t q = kActivationQMin; q <= kActivationQMax; ++q) {
    // Dequantize exactly as dequantizeValue does (float), so the table samples the very input
    // values the float reference would see; then evaluate and requantize in double.
    const double x = dequantizeValue(static_cast<int8_t>(q), in);
    const double y = f(x) / static_cast<double>(out.scale);
    // exp() overflowing to +inf saturates to 127 like any large value; NaN maps to the output
    // zero point (real 0), the same rule quantizeValue uses.
    const int64_t r = roundHalfAwayClamped(y, -(int64_t{1} << 40), int64_t{1} << 40, 0);
    lut[static_cast<size_t>(q - kActivationQMin)] = saturateToInt8(r + out.zero_point);
  }
  return lut;
}

void applyLut(const Int8Lut& lut, const int8_t* in, int64_t n, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lookupLut(lut, in[i]);
}

}  // namespace npuc::quant
