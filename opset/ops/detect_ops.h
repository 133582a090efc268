// The detection op family (issue #22): NonMaxSuppression, RoiAlign, GridSample and the ops whose
// output size depends on the data (NonZero, Compress, Unique). One file per op, detect_*.cpp;
// docs/ops_detect.md describes what each supports, its NPU decision and its INT8 rule.
#pragma once

#include "opset/registry.h"

namespace npuc {

// Registers every op of the family (called once from registerAllOps).
namespace detect {
void registerNmsOp(OpRegistry& reg);
void registerRoiAlignOp(OpRegistry& reg);
void registerGridSampleOp(OpRegistry& reg);
void registerNonZeroOp(OpRegistry& reg);
void registerCompressOp(OpRegistry& reg);
void registerUniqueOp(OpRegistry& reg);
}  // namespace detect

}  // namespace npuc
