// fuse_hardsigmoid: the hard sigmoid written out as arithmetic (Keras / TF exports of MobileNetV3 and
// EfficientNet-lite, hand-written "relu6(x + 3) / 6") becomes one HardSigmoid:
//
//   Mul(Clip(Add(x, b), 0, c), s)  with s = 1/c   ->   HardSigmoid(x; alpha = 1/c, beta = b/c)
//
// since min(max(x + b, 0), c) / c = max(0, min(1, x/c + b/c)). Why: three NPU tasks (two of them
// low-efficiency element-wise passes over the tensor) become one, and an INT8 build rounds once
// instead of three times. `Div(., c)` is already `Mul(., 1/c)` at level 3 (canonicalize). The
// fused kernel computes alpha * x + beta, another order than (x + b) * (1/c): level 3 only.
// `x * Clip(x + 3, 0, 6) / 6` stays fuse_activations' HardSwish: that root is the outer product.
#include <cmath>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

// How far s * c may be from 1: float32 literals of 1/c (0.16666667 for 1/6) are within 1e-7.
constexpr double kScaleTolerance = 1e-6;

class FuseHardSigmoid : public RewritePattern {
 public:
  FuseHardSigmoid() : RewritePattern("fuse_hardsigmoid", {"Mul"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& mul, Rewriter& rw) const override {
    Value *x = nullptr, *shift = nullptr, *low = nullptr, *high = nullptr, *scale = nullptr;
    auto pat = m::op("Mul",
                     m::op("Clip", m::op("Add", m::any(&x), m::scalarConstant(&shift)),
                           m::scalarConstant(&low), m::scalarConstant(&high)),
                     m::scalarConstant(&scale));
    if (m::matchRoot(mul, pat, rw).failed()) return failure();
    if (x->dtype() != DType::Float32) return rw.notifyMatchFailure(mul, "input is not float32");
    const double b = *scalarValue(shift), lo = *scalarValue(low), hi = *scalarValue(high),
                 s = *scalarValue(scale);
    if (lo != 0.0) return rw.notifyMatchFailure(mul, "Clip's lower bound is not 0");
    if (!(hi > 0.0) || std::abs(s * hi - 1.0) > kScaleTolerance)
      return rw.notifyMatchFailure(mul, "the scale is not 1 / (Clip's upper bound)");
    if (!sameStaticShape(*x, *mul.output())) return rw.notifyMatchFailure(mul, "the Add or Mul broadcasts x");
    Attributes attrs;
    attrs.set("alpha", static_cast<float>(1.0 / hi));
    attrs.set("beta", static_cast<float>(b / hi));
    rw.setInsertionPointBefore(&mul);
    Node* hard = rw.createLike(*mul.output(), "HardSigmoid", {x}, attrs, mul.name());
    rw.replaceOp(&mul, {hard->output()});
    return success();
  }
};

class FuseHardSigmoidPass : public PatternPass {
 public:
  const char* name() const override { return "fuse_hardsigmoid"; }
  const char* description() const override {
    return "Clip(x + b, 0, c) * (1/c) -> HardSigmoid(alpha = 1/c, beta = b/c)";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<FuseHardSigmoid>(); }
};

}  // namespace

std::unique_ptr<Pass> createFuseHardSigmoidPass() {
  return std::make_unique<FuseHardSigmoidPass>();
}

}  // namespace npuc
