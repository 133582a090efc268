#include "passes/transpose_util.h"

#include <algorithm>

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

}  // namespace npuc
