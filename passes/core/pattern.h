// A rewrite pattern: one local graph rewrite rooted at a node (in the spirit of MLIR's
// OpRewritePattern). Patterns say which op types they root at, so the driver only calls them on
// candidate nodes, and whether they may change numerics, so optimization_level can gate them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/core/logical_result.h"
#include "passes/core/rewriter.h"

namespace npuc {

class RewritePattern {
 public:
  // `root_ops`: op types the pattern can match at (empty: every node).
  RewritePattern(const char* name, std::vector<std::string> root_ops, bool changes_numerics = false)
      : name_(name), root_ops_(std::move(root_ops)), changes_numerics_(changes_numerics) {}
  virtual ~RewritePattern() = default;

  const char* name() const { return name_; }
  const std::vector<std::string>& rootOps() const { return root_ops_; }
  bool changesNumerics() const { return changes_numerics_; }

  // Either rewrites the graph around `root` through `rw` and returns success(), or leaves the
  // graph untouched and returns failure() (with rw.notifyMatchFailure when the reason is worth
  // telling a user). A pattern must not fail after it has modified the graph.
  virtual LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const = 0;

 private:
  const char* name_;
  std::vector<std::string> root_ops_;
  bool changes_numerics_;
};

// The patterns one pass applies together.
class PatternSet {
 public:
  template <typename P, typename... Args>
  PatternSet& add(Args&&... args) {
    patterns_.push_back(std::make_unique<P>(std::forward<Args>(args)...));
    return *this;
  }
  const std::vector<std::unique_ptr<RewritePattern>>& patterns() const { return patterns_; }

 private:
  std::vector<std::unique_ptr<RewritePattern>> patterns_;
};

}  // namespace npuc
