// The smallest equivalent form of a Transpose, shared by the passes that reshape around one
// (reduce_transpose_rank for the NPU's rank limit, canonicalize for Transposes that only move
// size-1 axes, propagate_reshapes for Transposes next to Reshapes).
#pragma once

#include <vector>

#include "ir/tensor.h"

namespace npuc {

// A Transpose of `in` by `perm` is the Transpose of `in` viewed as `shape` (row-major, the same
// elements) by `perm` here, followed by a view as the original output shape. Axes of size 1 are
// dropped (where they go changes no element's order) and every run of input axes that stays
// adjacent and in order in the output is merged (it moves as one block). An identity `perm` means
// the Transpose moves no element: it is a Reshape.
struct ReducedTranspose {
  Shape shape;
  std::vector<int64_t> perm;
};
ReducedTranspose reduceTranspose(const Shape& in, const std::vector<int64_t>& perm);

// `shape` permuted: out[i] = shape[perm[i]].
Shape permuted(const Shape& shape, const std::vector<int64_t>& perm);

// The inverse permutation: inv[perm[i]] = i.
std::vector<int64_t> inversePerm(const std::vector<int64_t>& perm);

// Transpose(t, perm) of a constant `t` viewed at `rank` (leading 1s added, as broadcasting does):
// out.dim(i) = in.dim(perm[i]). Lets an elementwise op's constant operand follow a Transpose that
// moves across the op.
Tensor transposedConstant(const Tensor& t, int64_t rank, const std::vector<int64_t>& perm);

}  // namespace npuc
