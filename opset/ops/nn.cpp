// Placeholder: the nn op family is registered here.
#include "opset/registry.h"

namespace npuc {

void registerNnOps(OpRegistry& reg) { (void)reg; }

}  // namespace npuc
