// Einsum equation parsing, shared by the Einsum op (shape inference, host kernel) and the
// lower_einsum pass (which turns batched-matmul, transpose and reduction forms into NPU ops).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace npuc {
namespace attn {

// Labels: 'a'-'z' are 0-25, 'A'-'Z' are 26-51, and the dims an ellipsis stands for are 52 + j, j
// counted from the left of the widest ellipsis (so "..." dims of different inputs broadcast
// right-aligned, as numpy does).
constexpr int kEllipsisLabel0 = 52;

struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // the labels of each input's dims, in order
  std::vector<int> output;               // the output's labels, in order
  std::vector<int64_t> size;             // size of each label (index = label), -1 where unused
  bool explicit_output = false;          // the equation had "->"
};

// Parses `equation` against the input shapes. Throws ShapeError naming `where` (the node) on a
// malformed equation, a term whose letter count does not fit its input's rank, or label sizes
// that disagree (a size-1 dim broadcasts against any size, like numpy's ellipsis dims).
EinsumSpec parseEinsum(const std::string& equation, const std::vector<Shape>& shapes,
                       const std::string& where);

// The output shape of a parsed spec.
Shape einsumOutputShape(const EinsumSpec& spec);

// True if some label appears twice in one term (a diagonal, e.g. "ii->i").
bool hasRepeatedLabel(const std::vector<int>& term);

// A label as it is written in an equation (for messages).
std::string labelName(int label);

}  // namespace attn
}  // namespace npuc
