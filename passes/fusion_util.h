// Small graph queries shared by the NPU fusion passes (fuse_layernorm, fuse_activations, fuse_glu,
// transpose_reorder, ...). They walk producer/consumer chains by hand where the combinator matcher
// (passes/core/matcher.h) cannot express a shape (a value with exactly two known users, optional
// links such as a Cast or an affine tail).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/rewriter.h"

namespace npuc {
namespace fusion {

// The producer of `v` if it is an ONNX-domain `op_type` node, else null.
Node* producerIs(const Value* v, const std::string& op_type);
// True for a non-null node whose output is input 0's elements under another shape (OpTrait::ShapeOnly:
// Reshape, Flatten, Squeeze, Unsqueeze), a view.
bool isView(const Node* n);
// The single consumer node of `v` (exactly one use, not a graph output), else null.
Node* soleConsumer(const Value* v);
// For a two-input node holding `one` as an operand, the other operand (null if `one` is not one).
Value* otherOperand(const Node& binary, const Value* one);
// True for a float32 value with a static shape.
bool isStaticFloat32(const Value* v);
// A one-element float constant's value (any float dtype), or nullopt.
std::optional<double> floatScalar(const Value* v);
// True if `v` is a one-element float constant within `rel_tol` (relative) of `expected`.
bool scalarNear(const Value* v, double expected, double rel_tol);
// The axes a Reduce* node reduces (input 1 or the legacy `axes` attribute), normalized against
// its input rank; nullopt if not constant. Empty axes mean all axes unless noop_with_empty_axes.
std::optional<std::vector<int64_t>> reduceAxes(const Node& reduce);
// The `to` dtype of a Cast node.
DType castTarget(const Node& cast);

// Creates a node of npuc's own domain (kNpucDomain) at the rewriter's insertion point with the
// given output type (shape inference of the ONNX domain would not find the op).
Node* createNpucOp(Rewriter& rw, DType dtype, const Shape& shape, const std::string& op_type,
                   const std::vector<Value*>& inputs, const Attributes& attrs, const std::string& name_hint);

}  // namespace fusion
}  // namespace npuc
