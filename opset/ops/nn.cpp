// The nn op family: convolutions, matrix products, pooling and normalizations. Each group lives
// in its own nn_*.cpp file; this one only wires them into the registry.
#include "opset/ops/nn_ops.h"

namespace npuc {

void registerNnOps(OpRegistry& reg) {
  nn::registerConvOps(reg);
  nn::registerConvTransposeOps(reg);
  nn::registerMatmulOps(reg);
  nn::registerPoolOps(reg);
  nn::registerNormOps(reg);
}

}  // namespace npuc
