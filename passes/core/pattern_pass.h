// A pass that is just a set of rewrite patterns applied greedily to a fixed point. A pattern-based
// pass file defines its patterns and a PatternPass subclass that lists them in populate().
#pragma once

#include <memory>

#include "passes/core/greedy_driver.h"
#include "passes/core/pass.h"
#include "passes/core/pattern.h"

namespace npuc {

class PatternPass : public Pass {
 public:
  size_t run(Graph& graph, PassContext& ctx) override {
    if (!patterns_) {
      patterns_ = std::make_unique<PatternSet>();
      populate(*patterns_);
    }
    return applyPatternsGreedily(graph, *patterns_, ctx);
  }

 protected:
  virtual void populate(PatternSet& patterns) const = 0;

 private:
  std::unique_ptr<PatternSet> patterns_;  // built on first run (populate is virtual)
};

}  // namespace npuc
