// Small queries and builders the passes share (constant contents, shape comparisons, axes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace npuc {

// The elements of an integer constant (any integer dtype), or nullopt if `v` is null or not a
// constant of integer type.
std::optional<std::vector<int64_t>> constantInts(const Value* v);
// The single element of a one-element constant as double, or nullopt.
std::optional<double> scalarValue(const Value* v);

// Both shapes known, static and equal.
bool sameStaticShape(const Value& a, const Value& b);
// Same dtype and sameStaticShape.
bool sameType(const Value& a, const Value& b);

// 1-D int64 tensor (shape [n], also for n == 1; Tensor::fromVector would make that a scalar).
Tensor int64Vector(const std::vector<int64_t>& values);

// Normalizes `axes` against `rank` (negative counted from the back), sorted and deduplicated.
// Returns nullopt if an axis is out of range.
std::optional<std::vector<int64_t>> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank);

// The Transpose permutation of `node` (the reversed dims when the attribute is absent).
std::vector<int64_t> transposePerm(const Node& node, int64_t rank);
bool isIdentityPerm(const std::vector<int64_t>& perm);

}  // namespace npuc
