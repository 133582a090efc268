// Placeholder: the data_movement op family is registered here.
#include "opset/registry.h"

namespace npuc {

void registerDataMovementOps(OpRegistry& reg) { (void)reg; }

}  // namespace npuc
