#include "passes/transpose_util.h"

#include <algorithm>
#include <cstring>

namespace npuc {

ReducedTranspose reduceTranspose(const Shape& in, const std::vector<int64_t>& perm) {
  // Axes that matter, in output order, renumbered by their order in the input.
  std::vector<int64_t> kept_rank(in.size(), -1);
  int64_t next = 0;
  for (size_t a = 0; a < in.size(); ++a)
    if (in[a] != 1) kept_rank[a] = next++;
  std::vector<int64_t> order;  // the kept input axes in output order
  for (int64_t a : perm)
    if (kept_rank[static_cast<size_t>(a)] >= 0) order.push_back(a);
  // Runs: consecutive output positions holding consecutive kept input axes form one group.
  std::vector<std::vector<int64_t>> groups;  // input axes of each group, in output order of groups
  for (size_t i = 0; i < order.size(); ++i) {
    const bool continues =
        i > 0 && kept_rank[static_cast<size_t>(order[i])] == kept_rank[static_cast<size_t>(order[i - 1])] + 1;
    if (continues) {
      groups.back().push_back(order[i]);
    } else {
      groups.push_back({order[i]});
    }
  }
  // Groups in input order give the reshaped input; their output order gives the permutation.
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  ReducedTranspose r;
  std::vector<int64_t> position(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) {
    int64_t size = 1;
    for (int64_t a : groups[by_input[i]]) size *= in[static_cast<size_t>(a)];
    r.shape.push_back(size);
    position[by_input[i]] = static_cast<int64_t>(i);
  }
  for (size_t g = 0; g < groups.size(); ++g) r.perm.push_back(position[g]);
  return r;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t a : perm) out.push_back(shape[static_cast<size_t>(a)]);
  return out;
}

std::vector<int64_t> inversePerm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

Tensor transposedConstant(const Tensor& t, int64_t rank, const std::vector<int64_t>& perm) {
  Shape in_shape(static_cast<size_t>(rank - t.rank()), 1);
  in_shape.insert(in_shape.end(), t.shape().begin(), t.shape().end());
  const Shape out_shape = permuted(in_shape, perm);
  Tensor out(t.dtype(), out_shape);
  // Input axis perm[d] is output axis d: walk the input in order, place each element.
  const std::vector<int64_t> in_strides = shapeStrides(in_shape), out_strides = shapeStrides(out_shape);
  std::vector<int64_t> out_stride_of_in(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    out_stride_of_in[static_cast<size_t>(perm[static_cast<size_t>(d)])] = out_strides[static_cast<size_t>(d)];
  const size_t elem = dtypeSize(t.dtype());
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t flat = 0; flat < t.numel(); ++flat) {
    int64_t rem = flat, target = 0;
    for (int64_t d = 0; d < rank; ++d) {
      target += rem / in_strides[static_cast<size_t>(d)] * out_stride_of_in[static_cast<size_t>(d)];
      rem %= in_strides[static_cast<size_t>(d)];
    }
    std::memcpy(dst + target * elem, src + flat * elem, elem);
  }
  return out;
}

}  // namespace npuc
