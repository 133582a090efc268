// Which op kinds have an integer kernel at 16-bit activations (the a16 dtypes of
// quant/quant_scheme.h). The quantizer marks the others FP16 in the plan, so the simulator, the
// lowering and the reports all read one decision from QuantPlan::nodes:
//   integer  Conv, Gemm, MatMul (constant B or two activations): int64 accumulators, wide_mac.h;
//            data movement / MaxPool (bytes move, parameters shared) and Relu/Clip (a clamp);
//            Add, Mul, Concat, GlobalAveragePool (binary_requant_wide.h);
//   FP16     AveragePool, LUT activations, and everything already FP16: dequantize, compute in
//            FP16, quantize to the output's int16 parameters. At 16 bits a LUT needs 65536 entries
//            per op; both are left for later (docs/quantization.md "Quantized dtypes").
#pragma once

#include "quant/graph/op_quant_class.h"
#include "quant/quant_scheme.h"

namespace npuc::quant {

inline bool hasSchemeIntegerKernel(QuantOpKind k, const QuantScheme& scheme) {
  if (scheme.activation_bits == 8) return k != QuantOpKind::Float16;
  switch (k) {
    case QuantOpKind::Conv:
    case QuantOpKind::Gemm:
    case QuantOpKind::MatMulConst:
    case QuantOpKind::MatMulActivation:
    case QuantOpKind::SharedScale:
    case QuantOpKind::ClampActivation:
    case QuantOpKind::Add:
    case QuantOpKind::Mul:
    case QuantOpKind::Concat:
    case QuantOpKind::GlobalAveragePool: return true;
    default: return false;
  }
}

}  // namespace npuc::quant
