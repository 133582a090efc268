// What the target NPU would say about a node a rewrite has not built yet. Target-stage passes
// (legalize_conv_stride, reduce_transpose_rank) try a form and keep it only if the same checks the
// partitioner applies (target/op_constraints.h) accept it, so a legalization never trades one CPU
// fallback for another and the limits are written once, in the SoC profile.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "target/op_constraints.h"

namespace npuc {

// One input of the candidate node: its type, and whether it is a constant (weights; built as zeros
// of that shape, since the checks read shapes, not values).
struct CandidateInput {
  DType dtype = DType::Float32;
  Shape shape;
  bool constant = false;
};

// The violations of an `op_type` node with these inputs, attributes and output type on `soc`
// (empty: it would run on the NPU). Built in a scratch graph; the real graph is not touched.
std::vector<Violation> candidateViolations(const std::string& op_type, const std::vector<CandidateInput>& inputs,
                                           const Attributes& attrs, DType out_dtype, const Shape& out_shape,
                                           const SocProfile& soc);

}  // namespace npuc
