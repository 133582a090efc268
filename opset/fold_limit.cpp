#include "opset/fold_limit.h"

#include <cstdint>

#include "ir/graph.h"

namespace npuc {

int64_t foldOutputBytes(const Node& n) {
  int64_t total = 0;
  for (const Value* out : n.outputs()) {
    if (!out->shapeIsStatic()) return -1;
    const int64_t numel = shapeNumel(out->shape());  // ResourceError beyond int64 elements
    const auto elem = static_cast<int64_t>(dtypeSize(out->dtype()));
    if (elem && numel > (INT64_MAX - total) / elem) return INT64_MAX;
    total += numel * elem;
  }
  return total;
}

}  // namespace npuc
