// The quantized op family: ONNX's already-quantized ops (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger). Each group lives
// in its own quantized_*.cpp file; this one only wires them into the registry.
#include "opset/ops/quantized_ops.h"

namespace npuc {

void registerQuantizedOps(OpRegistry& reg) {
  qops::registerQdqOps(reg);
  qops::registerIntegerMacOps(reg);
  qops::registerQLinearOps(reg);
}

}  // namespace npuc
