#include "passes/slice_util.h"

#include <algorithm>

#include "passes/core/ir_helpers.h"

namespace npuc {
namespace slicing {
namespace {

// ONNX clamps a positive-step range to [0, dim] and a negative-step one to [-1, dim - 1].
AxisMap axisMap(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto wrap = [dim](int64_t v) { return v < 0 ? v + dim : v; };
  AxisMap m;
  m.step = step;
  if (step > 0) {
    m.start = std::clamp<int64_t>(wrap(start), 0, dim);
    const int64_t e = std::clamp<int64_t>(wrap(end), 0, dim);
    m.count = e > m.start ? (e - m.start + step - 1) / step : 0;
  } else {
    m.start = std::clamp<int64_t>(wrap(start), 0, dim - 1);
    const int64_t e = std::clamp<int64_t>(wrap(end), -1, dim - 1);
    m.count = m.start > e ? (m.start - e - step - 1) / -step : 0;
  }
  return m;
}

}  // namespace

std::optional<std::vector<AxisMap>> constantSliceMaps(const Node& slice) {
  const Value* x = slice.input(0);
  if (!x || !x->shapeIsStatic()) return std::nullopt;
  const auto starts = constantInts(slice.input(1)), ends = constantInts(slice.input(2));
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (slice.input(3)) {
    const auto a = constantInts(slice.input(3));
    if (!a || a->size() != starts->size()) return std::nullopt;
    axes = *a;
  }
  if (slice.input(4)) {
    const auto s = constantInts(slice.input(4));
    if (!s || s->size() != starts->size()) return std::nullopt;
    steps = *s;
  }
  std::vector<AxisMap> maps;
  for (int64_t d : x->shape()) maps.push_back(AxisMap{0, 1, d});
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + x->rank() : axes[i];
    if (axis < 0 || axis >= x->rank() || steps[i] == 0) return std::nullopt;
    maps[static_cast<size_t>(axis)] =
        axisMap(x->shape()[static_cast<size_t>(axis)], (*starts)[i], (*ends)[i], steps[i]);
  }
  return maps;
}

std::vector<int64_t> selectedIndices(const AxisMap& map) {
  std::vector<int64_t> idx(static_cast<size_t>(map.count));
  for (int64_t i = 0; i < map.count; ++i) idx[static_cast<size_t>(i)] = map.start + map.step * i;
  return idx;
}

std::optional<AxisRange> singleAxisRange(const Node& slice) {
  const auto maps = constantSliceMaps(slice);
  if (!maps) return std::nullopt;
  std::optional<AxisRange> cut;
  const Shape& shape = slice.input(0)->shape();
  for (size_t a = 0; a < maps->size(); ++a) {
    const AxisMap& m = (*maps)[a];
    if (m.step == 1 && m.start == 0 && m.count == shape[a]) continue;  // the whole axis
    if (cut || m.step != 1 || m.count == 0) return std::nullopt;
    cut = AxisRange{static_cast<int64_t>(a), m.start, m.count};
  }
  return cut;
}

}  // namespace slicing
}  // namespace npuc
