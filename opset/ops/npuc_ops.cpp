// Placeholder: the npuc_ops op family is registered here.
#include "opset/registry.h"

namespace npuc {

void registerNpucOps(OpRegistry& reg) { (void)reg; }

}  // namespace npuc
