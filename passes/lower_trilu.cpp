// lower_trilu: Trilu(x, k) of a static shape with a constant (or absent) k becomes
// Mul(x, mask), mask a constant [rows, cols] 0/1 tensor that broadcasts over the leading dims.
// No NPU selects a triangle, every NPU multiplies, so the node leaves the CPU.
//
// Trilu writes 0 where the mask is 0; Mul writes x * 0, which differs when x is Inf or NaN there
// (NaN instead of 0). Real exports build their -inf causal masks from constants (folded before
// this pass runs) and apply Trilu to finite scores, but the rewrite is not exact: level 3 only.
// Refused: non-float32 x (the mask would be an integer Mul the NPU profile does not cover),
// a k that is not constant, an unknown shape.
#include "opset/registry.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

class LowerTrilu : public RewritePattern {
 public:
  LowerTrilu() : RewritePattern("lower_trilu", {"Trilu"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root, "Trilu '" + root.name() + "' stays on the CPU: " + why);
    };
    Value* x = root.input(0);
    if (x->isConstant()) return failure();  // constant folding's job
    if (!x->shapeIsStatic() || x->rank() < 2) return refuse("the input shape is not static");
    if (x->dtype() != DType::Float32) return refuse("the input is not float32");
    int64_t k = 0;
    if (root.hasInput(1)) {
      const auto ks = constantInts(root.input(1));
      if (!ks || ks->size() != 1) return refuse("k is not a constant scalar");
      k = (*ks)[0];
    }
    const bool upper = root.attrs().i("upper", 1) != 0;
    const int64_t rows = x->shape()[x->shape().size() - 2], cols = x->shape().back();
    Tensor mask(DType::Float32, {rows, cols});
    float* m = mask.data<float>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = (upper ? j - i >= k : j - i <= k) ? 1.0f : 0.0f;
    rw.setInsertionPointBefore(&root);
    Node* mul = rw.createLike(*root.output(), "Mul", {x, rw.constant(std::move(mask), root.name() + "_mask")},
                              {}, root.name());
    rw.replaceOp(&root, {mul->output()});
    return success();
  }
};

class LowerTriluPass : public PatternPass {
 public:
  const char* name() const override { return "lower_trilu"; }
  const char* description() const override { return "Trilu with a constant k -> Mul by a constant 0/1 mask"; }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<LowerTrilu>(); }
};

}  // namespace

std::unique_ptr<Pass> createLowerTriluPass() {
  return std::make_unique<LowerTriluPass>();
}

}  // namespace npuc
