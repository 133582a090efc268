// Shape inference over a whole graph, with constant folding of everything computable at compile
// time (Shape of a static tensor, arithmetic on constants, ...), bounded by a size cap.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "opset/fold_limit.h"

namespace npuc {

struct FoldStats {
  size_t folded_nodes = 0;
  size_t kept_over_limit = 0;  // nodes not folded because the result would exceed the cap
};

// Infers every node's output types in topological order, folding nodes whose inputs are all
// constant (or, for Shape/Size, whose input shape is static) when the result fits in
// `fold_limit_bytes`. Dead nodes left behind are removed. Throws ShapeError naming the node.
FoldStats inferShapesAndFold(Graph& graph, int64_t fold_limit_bytes = kDefaultFoldLimitBytes);

// Throws UnsupportedOpError for the first node whose op (or input dtype) has no kernel.
void checkOpsSupported(const Graph& graph);

}  // namespace npuc
