// The pass interface. A pass is one file in passes/ holding one class (or one pattern set); the
// registry (pass_registry.cpp) lists every pass by name so the pass manager can run, order and
// disable them without knowing their types.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "passes/core/pass_context.h"

namespace npuc {

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable snake_case name used by disable_passes, reports and dumps.
  virtual const char* name() const = 0;
  // One line for `npuc passes` and the docs.
  virtual const char* description() const = 0;
  // The pass runs when optimization_level >= this (1 for every pass we have).
  virtual int minOptimizationLevel() const { return 1; }
  // True if the pass as a whole may change results beyond bit-exactness (float reassociation,
  // reciprocal multiplication). Such passes run only at optimization_level 3. A pass that is
  // exact in general but holds a few numerics-changing patterns says false here and gates those
  // patterns itself (RewritePattern::changesNumerics).
  virtual bool changesNumerics() const { return false; }
  // Rewrites `graph` in place and returns how many changes it made (0: the graph is untouched).
  virtual size_t run(Graph& graph, PassContext& ctx) = 0;
};

using PassFactory = std::unique_ptr<Pass> (*)();

}  // namespace npuc
