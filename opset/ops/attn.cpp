// The attention-helper / signal / small numeric op family; each sub-family is one attn_*.cpp.
#include "opset/ops/attn_ops.h"

namespace npuc {

void registerAttnOps(OpRegistry& reg) {
  attn::registerEinsumOp(reg);
  attn::registerTriluOp(reg);
  attn::registerNormOps(reg);
  attn::registerDetOp(reg);
  attn::registerWindowOps(reg);
  attn::registerSignalOps(reg);
  attn::registerRandomOps(reg);
}

}  // namespace npuc
