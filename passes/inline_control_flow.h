// Inlining of control flow known at compile time (If with a constant condition, Loop with a
// constant short trip count, Scan with a short sequence), so what remains is ordinary ops that the
// NPU can take. It runs inside the import's shape-inference sweep (frontend/shape_inference.cpp),
// right where shape sub-graphs fold to constants, before the node itself is inferred: an If on
// `x.shape[2] > 32` becomes its taken branch once the input shape is fixed. Data-dependent control
// flow is left alone and runs on the CPU (opset/ops/control_*.cpp).
#pragma once

#include <memory>

#include "ir/graph.h"
#include "passes/core/pattern.h"

namespace npuc {

// Unroll bounds: a Loop or Scan is unrolled when its trip count is at most kMaxUnrollTrips and the
// unrolled copies hold at most kMaxUnrolledNodes nodes. Loops in exported models iterate over
// layers, heads or a few refinement steps (tens); past these bounds the graph would grow by
// thousands of nodes for a loop whose body the CPU runs just as well, so it stays a Loop.
constexpr int64_t kMaxUnrollTrips = 64;
constexpr int64_t kMaxUnrolledNodes = 2048;
// And the whole graph may hold at most kMaxGraphNodesAfterUnroll nodes after an unrolling: the
// per-loop bound alone lets nested loops multiply (three levels of 64 trips would make millions
// of nodes from a small file). 65536 is ten times the largest exported model npuc has met
// (densenet201's 505 nodes, a 1232-node unrolled CRNN); loops past it stay loops, on the CPU.
constexpr int64_t kMaxGraphNodesAfterUnroll = 65536;

// The pattern (roots If, Loop, Scan). Its nodes are placed before the root and typed from the
// inferred sub-graph; failure reasons say what kept the node from inlining.
class InlineControlFlow : public RewritePattern {
 public:
  InlineControlFlow() : RewritePattern("inline_control_flow", {"If", "Loop", "Scan"}) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override;
};

// Runs the pattern on `node` in the import sweep. Returns the node the sweep continues with (the
// first inlined node, or the one after `node` when the inlined body was empty) and sets *inlined;
// `node` is erased then. When not inlined, returns `node`.
Node* inlineControlFlowAt(Graph& g, Node* node, bool* inlined);

}  // namespace npuc
