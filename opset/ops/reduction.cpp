// Placeholder: the reduction op family is registered here.
#include "opset/registry.h"

namespace npuc {

void registerReductionOps(OpRegistry& reg) { (void)reg; }

}  // namespace npuc
