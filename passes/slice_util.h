// Reading a Slice node with constant parameters as an affine index map per axis, shared by the
// passes that reason about which elements a Slice (or a chain of Slices) selects
// (channel_shuffle_to_conv, fold_focus).
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace npuc {
namespace slicing {

// Along one axis, output index i reads input index start + step * i, for i in [0, count).
struct AxisMap {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// The map of every axis of `slice`'s input (axes it does not list are {0, 1, dim}), following
// ONNX Slice semantics (negative starts/ends count from the back, then clamp; any nonzero step).
// nullopt unless the input shape is static and starts/ends/axes/steps are integer constants.
std::optional<std::vector<AxisMap>> constantSliceMaps(const Node& slice);

// The input indices one axis map selects, in output order.
std::vector<int64_t> selectedIndices(const AxisMap& map);

// A Slice that takes the contiguous range [start, start + count) of one axis and all of every other
// axis (the split of a fused projection into q/k/v, of a tensor into heads).
struct AxisRange {
  int64_t axis = 0;
  int64_t start = 0;
  int64_t count = 0;
};
// The range of `slice`, or nullopt unless its parameters are constant, its input shape static,
// its step 1 and exactly one axis is cut.
std::optional<AxisRange> singleAxisRange(const Node& slice);

}  // namespace slicing
}  // namespace npuc
