// The scatter / gather / indexing op family (issue #22). Each group lives in its own
// opset/ops/scatter_*.cpp file; this function only lists them.
#include "opset/ops/scatter_common.h"

namespace npuc {

void registerScatterOps(OpRegistry& reg) {
  registerScatterNdOps(reg);
  registerScatterElementsOps(reg);
  registerScatterGenerateOps(reg);
  registerScatterReorderOps(reg);
}

}  // namespace npuc
