// Placeholder: the elementwise op family is registered here.
#include "opset/registry.h"

namespace npuc {

void registerElementwiseOps(OpRegistry& reg) { (void)reg; }

}  // namespace npuc
