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

namespace npuc {
namespace {

// A Transpose reduced to its smallest rank: the input viewed as `shape`, permuted by `perm`.
struct Reduced {
  Shape shape;
  std::vector<int64_t> perm;
};

Reduced reduceTranspose(const Shape& in, const std::vector<int64_t>& perm) {
  // Axes that matter, in output order, renumbered by their order in the input.
  std::vector<int64_t> kept_rank(in.size(), -1);
  int64_t next = 0;
  for (size_t a = 0; a < in.size(); ++a)
    if (in[a] != 1) kept_rank[a] = next++;
  std::vector<int64_t> order;  // the kept input axes in output order
  for (int64_t a : perm)
    if (kept_rank[static_cast<size_t>(a)] >= 0) order.push_back(a);
  // Runs: consecutive output positions holding consecutive kept input axes form one group.
  std::vector<std::vector<int64_t>> groups;  // input axes of each group, in output order of groups
  for (size_t i = 0; i < order.size(); ++i) {
    const bool continues =
        i > 0 && kept_rank[static_cast<size_t>(order[i])] == kept_rank[static_cast<size_t>(order[i - 1])] + 1;
    if (continues) {
      groups.back().push_back(order[i]);
    } else {
      groups.push_back({order[i]});
    }
  }
  // Groups in input order give the reshaped input; their output order gives the permutation.
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  Reduced r;
  std::vector<int64_t> position(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) {
    int64_t size = 1;
    for (int64_t a : groups[by_input[i]]) size *= in[static_cast<size_t>(a)];
    r.shape.push_back(size);
    position[by_input[i]] = static_cast<int64_t>(i);
  }
  for (size_t g = 0; g < groups.size(); ++g) r.perm.push_back(position[g]);
  return r;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t a : perm) out.push_back(shape[static_cast<size_t>(a)]);
  return out;
}

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
    const Reduced r = reduceTranspose(x->shape(), transposePerm(root, x->rank()));
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
