// reduce_transpose_rank: a Transpose of higher rank than the target NPU runs becomes
// Reshape -> Transpose of the smallest equivalent rank -> Reshape, so it stays on the NPU.
// The typical case is the head split of an attention block exported from PyTorch:
// [1, 40, 3, 8, 15] permuted (2, 0, 3, 1, 4) (q/k/v, batch, heads, tokens, head dim) is rank 5,
// above RK3588's 4, and used to cost two NPU<->CPU hand-overs.
//
// The smallest equivalent: drop the axes of size 1 (where they go changes no element's order),
// then merge every run of input axes that stays adjacent and in order in the output (they move as
// one block). The example becomes [40, 24, 15] -> [24, 40, 15] with perm (1, 0, 2): rank 3.
// The Reshapes are free views (no data movement), and merge_reshapes folds them into neighbouring
// Reshapes where there are some. Pure data movement: bit-exact at every level.
//
// Not reduced (a match failure says why): a Transpose whose smallest form still breaks a limit
// (too many independent axes, or a merged dim above the SoC's max_dim), one the user put on the
// CPU (op_target), and one that breaks limits other than its rank.
#include <fmt/format.h>

#include <algorithm>

#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"
#include "passes/npu_candidate.h"
#include "passes/transpose_util.h"

namespace npuc {
namespace {

class ReduceTransposeRank : public RewritePattern {
 public:
  ReduceTransposeRank() : RewritePattern("reduce_transpose_rank", {"Transpose"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const auto subject = legalizationSubject(root, rw.context(), {"Transpose.max_rank"});
    if (!subject) return failure();
    const SocProfile& soc = *subject->soc;
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root,
                                   fmt::format("Transpose '{}' ({}) not reduced for {}: {}", root.name(),
                                               subject->violations.front().message, soc.name, why));
    };
    if (subject->placed_by_user) return refuse("op_target places it");
    Value* x = root.input(0);
    const ReducedTranspose r = reduceTranspose(x->shape(), transposePerm(root, x->rank()));
    const Shape out = permuted(r.shape, r.perm);
    if (!isIdentityPerm(r.perm)) {
      Attributes a;
      a.set("perm", r.perm);
      const std::vector<Violation> left =
          candidateViolations("Transpose", {{x->dtype(), r.shape}}, a, x->dtype(), out, soc);
      if (!left.empty())
        return refuse(fmt::format("its smallest form, {} perm {}, fails too: {}", shapeStr(r.shape),
                                  fmt::join(r.perm, ","), left.front().message));
    }
    rw.setInsertionPointBefore(&root);
    Value* view =
        rw.create("Reshape", {x, rw.constant(int64Vector(r.shape), root.name() + "_shape")}, {}, root.name())
            ->output();
    if (!isIdentityPerm(r.perm)) {
      Attributes a;
      a.set("perm", r.perm);
      view = rw.create("Transpose", {view}, a, root.name())->output();
    }
    const Shape& y = root.output()->shape();
    Node* back =
        rw.createLike(*root.output(), "Reshape",
                      {view, rw.constant(int64Vector(y), root.name() + "_out_shape")}, {}, root.name());
    rw.replaceOp(&root, {back->output()});
    return success();
  }
};

class ReduceTransposeRankPass : public PatternPass {
 public:
  const char* name() const override { return "reduce_transpose_rank"; }
  const char* description() const override {
    return "Transpose above the target NPU's rank limit -> Reshape + Transpose of the smallest equivalent "
           "rank + "
           "Reshape (target stage only)";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<ReduceTransposeRank>(); }
};

}  // namespace

std::unique_ptr<Pass> createReduceTransposeRankPass() {
  return std::make_unique<ReduceTransposeRankPass>();
}

}  // namespace npuc
