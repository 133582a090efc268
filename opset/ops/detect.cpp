// The detection op family; see detect_ops.h.
#include "opset/ops/detect_ops.h"

namespace npuc {

void registerDetectOps(OpRegistry& reg) {
  detect::registerNmsOp(reg);
  detect::registerRoiAlignOp(reg);
  detect::registerGridSampleOp(reg);
  detect::registerNonZeroOp(reg);
  detect::registerCompressOp(reg);
  detect::registerUniqueOp(reg);
}

}  // namespace npuc
