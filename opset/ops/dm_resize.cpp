#include "opset/ops/dm_common.h"
namespace npuc {
void registerDmResizeOps(OpRegistry& reg) { (void)reg; }
}  // namespace npuc
