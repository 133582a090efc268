// The reduction op family: ops that combine elements along axes. Each sub-family lives in its own
// reduction_*.cpp file; see ew_reduction.h.
#include "opset/ops/ew_reduction.h"
#include "opset/registry.h"

namespace npuc {

void registerReductionOps(OpRegistry& reg) {
  ew::registerReduceOps(reg);
  ew::registerArgOps(reg);
  ew::registerSoftmaxOps(reg);
  ew::registerTopKOp(reg);
  ew::registerCumSumOp(reg);
  ew::registerTfIdfOp(reg);
}

}  // namespace npuc
