// GELU's constants, written once. Its exact form is 0.5 x (1 + erf(x / sqrt 2)); its tanh form
// (approximate="tanh", the GELU paper's) is 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// Read by the op's kernels (opset/ops/npuc_ops.cpp), the pass that recognizes both formulas
// (passes/fuse_activations.cpp), the standard-op expansion for QDQ export
// (quant/graph/standard_op_expansion.cpp) and the INT8 simulator's table (quant/sim/eltwise_steps.cpp).
#pragma once

namespace npuc {

constexpr double kGeluSqrt2 = 1.41421356237309504880;        // sqrt(2)
constexpr double kGeluInvSqrt2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kGeluSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;                      // the tanh form's cubic coefficient

}  // namespace npuc
