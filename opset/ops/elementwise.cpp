// The elementwise op family: same-position math over (broadcast) tensors. Each sub-family lives
// in its own elementwise_*.cpp file; see ew_families.h.
#include "opset/ops/ew_families.h"
#include "opset/registry.h"

namespace npuc {

void registerElementwiseOps(OpRegistry& reg) {
  ew::registerUnaryMathOps(reg);
  ew::registerArithmeticOps(reg);
  ew::registerLogicOps(reg);
  ew::registerCastOp(reg);
}

}  // namespace npuc
