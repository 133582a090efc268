// Helpers shared by the calibration algorithms (calibrate*.cpp); not part of the public API.
#pragma once

#include "quant/calibrate.h"

namespace npuc::quant {

// Clamps [lo, hi] so that it contains 0 (the quantizer needs it) and never exceeds the observed
// data, and converts it to float.
ClipRange containZeroWithinObserved(const ActivationHistogram& h, double lo, double hi);

}  // namespace npuc::quant
