// Applies a PatternSet to a fixed point with a worklist (in the spirit of MLIR's greedy pattern
// driver): every node is visited once, and after a rewrite only the nodes the change can affect
// (new nodes, users of replaced values, producers that lost a user) are revisited. A full sweep
// follows each sweep that changed something, so the result does not depend on visiting order;
// after PassContext::max_greedy_iterations sweeps the driver stops and reports non-convergence
// (a warning in the context) instead of looping.
#pragma once

#include <cstddef>

#include "ir/graph.h"
#include "passes/core/pass_context.h"
#include "passes/core/pattern.h"

namespace npuc {

// Returns the number of successful rewrites. Patterns that change numerics are skipped unless
// ctx.allowsNumericsChange().
size_t applyPatternsGreedily(Graph& graph, const PatternSet& patterns, PassContext& ctx);

}  // namespace npuc
