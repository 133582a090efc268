// compose_transposes: Transpose(Transpose(x, p1), p2) is Transpose(x, p) with p[i] = p1[p2[i]]
// (output dim i of the second reads dim p2[i] of the first, which reads dim p1[p2[i]] of x);
// when p is the identity both go away.
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

class ComposeTransposePair : public RewritePattern {
 public:
  ComposeTransposePair() : RewritePattern("compose_transpose_pair", {"Transpose"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    Node* inner = nullptr;
    auto pat = m::op("Transpose", m::op("Transpose", m::any(&x)).bind(&inner));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    if (!x->hasShape()) return rw.notifyMatchFailure(root, "rank of '" + x->name() + "' is unknown");
    const int64_t rank = x->rank();
    const std::vector<int64_t> p1 = transposePerm(*inner, rank), p2 = transposePerm(root, rank);
    if (static_cast<int64_t>(p1.size()) != rank || p2.size() != p1.size()) {
      return rw.notifyMatchFailure(root, "permutation lengths do not match rank " + std::to_string(rank));
    }
    std::vector<int64_t> p(p2.size());
    for (size_t i = 0; i < p2.size(); ++i) p[i] = p1[static_cast<size_t>(p2[i])];
    if (isIdentityPerm(p)) {
      if (!rw.canReplace(*root.output(), *x)) {
        return rw.notifyMatchFailure(
            root, "the pair is the identity but its output is a graph output that '" + x->name() +
                      "' cannot stand in for");
      }
      rw.replaceOp(&root, {x});
      return success();
    }
    Attributes attrs;
    attrs.set("perm", p);
    Node* composed = rw.createLike(*root.output(), "Transpose", {x}, attrs, root.name());
    rw.replaceOp(&root, {composed->output()});
    return success();
  }
};

class ComposeTransposesPass : public PatternPass {
 public:
  const char* name() const override { return "compose_transposes"; }
  const char* description() const override { return "composes Transpose chains; removes identity results"; }

 protected:
  void populate(PatternSet& p) const override { p.add<ComposeTransposePair>(); }
};

}  // namespace

std::unique_ptr<Pass> createComposeTransposesPass() {
  return std::make_unique<ComposeTransposesPass>();
}

}  // namespace npuc
