// Rewrites older ONNX opset forms into the canonical forms that npuc's op set implements (see
// the top of opset/registry.h), so shape inference and kernels know one form per op:
//   attributes -> constant inputs for Slice (<10), Pad (<11), Split (<13), Squeeze/Unsqueeze
//   (<13), ReduceSum (<13) and every other Reduce* (<18), Clip min/max (<11), TopK k (<10);
//   Upsample (any opset) and Resize-10 -> Resize(X, roi=omitted, scales) with the asymmetric
//   coordinate mapping they implied; Softmax/LogSoftmax/Hardmax (<13) over a non-last axis ->
//   Flatten -> op(axis=-1) -> Reshape(Shape(X)); unused BatchNormalization/Dropout training
//   outputs dropped; obsolete attributes (consumed_inputs, is_test, Dropout ratio) removed.
// Opsets 1 to 6 (see each rule's comment): broadcast/axis on binary ops (<7) become numpy
//   broadcasting, PRelu's per-channel slope (<7) is lined up with dim 1, Gemm broadcast (<7)
//   dropped, Concat's default axis 1 (<4) made explicit, Reshape's shape attribute (<5) and
//   Tile-1's (tiles, axis) become inputs, Cast's type name (<6) a type number, Pad-1 paddings and
//   Upsample-1 height/width scales renamed.
// Opset 20+: Gelu moves to npuc's own ai.npuc Gelu (same definition).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace npuc {

// `opset` is the model's default-domain opset version. Nodes of other domains are left alone.
// Throws UnsupportedOpError naming the node, op and opset for legacy variants npuc does not
// implement (BatchNormalization with spatial=0, Tile-1 with non-constant tiles, ...). Nodes may be out of topological order; new nodes are placed next to the node
// they replace.
void upgradeLegacyForms(Graph& graph, int64_t opset);

}  // namespace npuc
