// Views a tensor as [outer, len, inner] around one axis: the layout every single-axis op
// (Softmax, ArgMax, TopK, GLU, ...) iterates, with element (o, r, i) at (o * len + r) * inner + i.
#pragma once

#include <cstdint>

#include "ir/tensor.h"

namespace npuc {
namespace ew {

struct AxisSplit {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
};

// `axis` must already be normalized to [0, rank).
inline AxisSplit splitAtAxis(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) {
      s.outer *= shape[d];
    } else if (d == axis) {
      s.len = shape[d];
    } else {
      s.inner *= shape[d];
    }
  }
  return s;
}

}  // namespace ew
}  // namespace npuc
