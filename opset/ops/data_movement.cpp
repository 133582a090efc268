// The data-movement and shape op family. Each group lives in its own opset/ops/dm_*.cpp file;
// this function only lists them.
#include "opset/ops/dm_common.h"

namespace npuc {

void registerDataMovementOps(OpRegistry& reg) {
  registerDmReshapeOps(reg);
  registerDmTransposeOps(reg);
  registerDmConcatSplitOps(reg);
  registerDmSliceGatherOps(reg);
  registerDmPadTileExpandOps(reg);
  registerDmResizeOps(reg);
  registerDmGenerateOps(reg);
}

}  // namespace npuc
