// Shared pieces of the scatter / gather / indexing family (opset/ops/scatter_*.cpp): reading
// int32/int64 index tensors, bounds checks whose errors name the node and the offending index,
// and the ScatterND / ScatterElements reductions.
//
// Every kernel of this family checks each index before it reads or writes through it: an index
// comes from data, so a wrong one must be an InputError, never an out-of-bounds access.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "opset/ops/dm_common.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace scatter {

// Index tensors are int32 or int64.
struct IndexReader {
  const void* data = nullptr;
  bool is64 = true;
  int64_t operator[](int64_t i) const {
    return is64 ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

// "ScatterND node 'name'": how run-time errors (a bad index) start. Shape inference and kernel
// construction errors start with the op alone: inferNode and the executor put the node in front.
inline std::string nodeLabel(const Node& n) {
  return n.opType() + " node '" + n.name() + "'";
}

// Throws ShapeError unless `t` is int32 or int64.
inline void checkIndexDType(const Node& n, DType t, const char* what) {
  if (t != DType::Int64 && t != DType::Int32) {
    throw ShapeError(n.opType() + ": " + what + " must be int32 or int64, got " + dtypeName(t));
  }
}

// Maps a possibly negative index into [0, dim) or throws InputError naming the node, the index,
// where it sits in the index tensor and the axis it indexes.
inline int64_t wrapIndex(int64_t idx, int64_t dim, const std::string& label, int64_t position, int64_t axis) {
  const int64_t k = idx < 0 ? idx + dim : idx;
  if (k < 0 || k >= dim) {
    throw InputError(label + ": index " + std::to_string(idx) + " (element " + std::to_string(position) +
                     " of the indices) is out of range for axis " + std::to_string(axis) + " of size " +
                     std::to_string(dim));
  }
  return k;
}

// The `reduction` attribute of ScatterND (opset 16/18) and ScatterElements (opset 16/18).
enum class Reduction { None, Add, Mul, Max, Min };

inline Reduction parseReduction(const Node& n) {
  const std::string r = n.attrs().s("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  throw UnsupportedOpError(n.opType() + ": reduction '" + r + "' is not one of none, add, mul, max, min");
}

// dst = reduce(dst, src) for one element.
template <typename T>
inline void reduceInto(Reduction r, T& dst, T src) {
  switch (r) {
    case Reduction::None: dst = src; return;
    case Reduction::Add: dst = static_cast<T>(dst + src); return;
    case Reduction::Mul: dst = static_cast<T>(dst * src); return;
    case Reduction::Max: dst = std::max(dst, src); return;
    case Reduction::Min: dst = std::min(dst, src); return;
  }
}

// Row-major element strides of `shape`.
inline std::vector<int64_t> elementStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// The product of dims [from, to) of `s` (to is clamped to the rank).
inline int64_t numelOf(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  const auto first = s.begin() + static_cast<std::ptrdiff_t>(std::min(from, s.size()));
  const auto last = s.begin() + static_cast<std::ptrdiff_t>(std::min(to, s.size()));
  int64_t n = 1;
  for (auto it = first; it < last; ++it) n *= *it;
  return n;
}

}  // namespace scatter

// Family registration, split by file.
void registerScatterNdOps(OpRegistry& reg);        // GatherND, ScatterND
void registerScatterElementsOps(OpRegistry& reg);  // ScatterElements, Scatter (opset 9/10)
void registerScatterGenerateOps(OpRegistry& reg);  // OneHot, EyeLike
void registerScatterReorderOps(OpRegistry& reg);   // ReverseSequence, MaxUnpool

}  // namespace npuc
