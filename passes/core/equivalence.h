// When two values or nodes compute the same thing. Shared by common_subexpression_elimination
// (which merges equivalent nodes) and extract_common_factor (which needs "the same op with the
// same constant" on every Concat input), so both passes agree on what "the same" means.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace npuc {

// Hash of a tensor's dtype, shape and a bounded sample of its bytes: cheap for large weights,
// and equal tensors always hash equal. Confirm a hash hit with Tensor::bitwiseEqual.
size_t tensorFingerprint(const Tensor& t);
// The same value, or two constants holding bitwise-identical tensors.
bool sameValueOrEqualConstant(const Value* a, const Value* b);
// Same op type, domain, attributes and output count, and pairwise sameValueOrEqualConstant
// inputs, except input `skip_input` (pass SIZE_MAX to compare all).
bool equivalentNodes(const Node& a, const Node& b, size_t skip_input = static_cast<size_t>(-1));

}  // namespace npuc
