// The integer multiply-accumulate cores of ConvInteger / QLinearConv and MatMulInteger /
// QLinearMatMul: int32 operands with their zero points already subtracted, exact int32 sums
// (wrapping on overflow as ONNX Runtime's int32 accumulators do). Plain loops: these ops run on the
// host for already-quantized models and for checking, not in npuc's hot path.
#pragma once

#include <vector>

#include "opset/ops/nn_conv_kernel.h"
#include "opset/ops/quantized_ops.h"

namespace npuc::qops {

// dst[i] = src[i] - zero_point[idx(i)] (zero_point may be null: 0).
void subtractZeroPoint(const TensorView& src, const TensorView* zero_point, ParamIndex idx, int32_t* dst);

// acc[N, M, out...] = sum over c, kernel of x[N, g*C/group + c, in...] * w[M, c, kernel...]; padding
// contributes 0 (a padded input equals its zero point). 1 to 3 spatial dims.
void intConv(const nn::ConvSpec& s, const int32_t* x, const int32_t* w, int32_t* acc);

// numpy matmul geometry of two integer operands (1-D operands promoted, batch dims broadcast).
struct IntMatMulSpec {
  Shape out;  // the ONNX output shape
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_off, b_off;  // element offset of A's and B's matrix for each output batch
};
// Throws ShapeError naming op and both shapes when inner dims or batch dims disagree.
IntMatMulSpec resolveIntMatMul(const std::string& op, const Shape& a, const Shape& b);
void intMatMul(const IntMatMulSpec& s, const int32_t* a, const int32_t* b, int32_t* acc);

}  // namespace npuc::qops
