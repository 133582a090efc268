// Shared pieces of the quantized op family (quantized_*.cpp): the registration entry points and
// the integer arithmetic every op of the family agrees on, so QuantizeLinear, QLinearConv and
// QLinearMatMul round and saturate the same way (the ONNX spec's, which ONNX Runtime's MLAS does).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "opset/registry.h"

namespace npuc::qops {

void registerQdqOps(OpRegistry& reg);         // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void registerIntegerMacOps(OpRegistry& reg);  // ConvInteger, MatMulInteger (quantized_integer.cpp)
void registerQLinearOps(OpRegistry& reg);     // QLinearConv, QLinearMatMul (quantized_qlinear.cpp)

// The integer range of a quantized element type; throws ShapeError naming `what` for other types.
struct QRange {
  int32_t lo = 0, hi = 0;
};
QRange quantRange(DType t, const std::string& what);

// round_half_to_even(v) + zero_point, saturated to r. The ONNX spec's quantization; NaN gives
// r.lo, as ONNX Runtime's x86 kernels do (their max(NaN, lo) yields lo).
inline int32_t quantizeValue(float v, int32_t zero_point, QRange r) {
  if (std::isnan(v)) return r.lo;
  float q = std::nearbyint(v) + static_cast<float>(zero_point);  // default rounding: half to even
  q = q < static_cast<float>(r.lo) ? static_cast<float>(r.lo) : q;
  q = q > static_cast<float>(r.hi) ? static_cast<float>(r.hi) : q;
  return static_cast<int32_t>(q);
}

// Element i of an integer tensor (uint8, int8, int16, uint16, int32) as int32.
int32_t intAt(const TensorView& t, int64_t i);
// Writes v (already in range) into element i of an integer tensor.
void storeInt(const TensorView& t, int64_t i, int32_t v);
// Element i of a float32 tensor view.
inline float floatAt(const TensorView& t, int64_t i) {
  return t.as<const float>()[i];
}

// Which element of a scale / zero-point tensor applies to element i of the data: per tensor
// (one value) or per slice of `axis`.
struct ParamIndex {
  int64_t dim = 1;    // size of the quantized axis; 1 for per-tensor
  int64_t inner = 1;  // elements after the axis
  int64_t operator()(int64_t i) const { return dim == 1 ? 0 : (i / inner) % dim; }
};
// Checks a scale (and zero point, if given) against data shape `x` and `axis`: one value, or a
// 1-D tensor of x[axis] values. Throws ShapeError naming op, the parameter and the shapes.
ParamIndex resolveParams(const std::string& op, const Shape& x, int64_t axis, const Shape& scale,
                         const Shape* zero_point);

// Per-output-channel (or per-column) parameter of `count` channels: one value broadcast, or
// exactly `count`. Throws ShapeError naming op and what.
void checkChannelParam(const std::string& op, const char* what, const Shape& s, int64_t count);

}  // namespace npuc::qops
