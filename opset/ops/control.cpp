// The control-flow op family: If, Loop, Scan (sub-graphs: frontend/onnx_subgraph.h; inlining of
// the ones known at compile time: passes/inline_control_flow.cpp).
#include "opset/ops/control_subgraph.h"

namespace npuc {

void registerControlFlowOps(OpRegistry& reg) {
  registerIfOp(reg);
  registerLoopOp(reg);
  registerScanOp(reg);
}

}  // namespace npuc
