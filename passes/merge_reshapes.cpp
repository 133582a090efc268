// merge_reshapes: a chain of pure shape changes (Reshape, Squeeze, Unsqueeze, Flatten) is one
// Reshape to the final shape, given as a constant. All of these reinterpret the same row-major
// data, so only the last shape matters. Needs static shapes; the result of merging two links is
// merged with the next link when the driver reaches it, so chains of any length collapse.
#include <algorithm>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

class MergeShapeChain : public RewritePattern {
 public:
  MergeShapeChain() : RewritePattern("merge_shape_chain", opTypesWith(OpTrait::ShapeOnly)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    // The inner view may have other readers: a view of a view reads the same bytes, so the outer one
    // can read x directly while the inner one stays for the others (no work is duplicated).
    auto pat = m::trait(OpTrait::ShapeOnly,
                        m::trait(OpTrait::ShapeOnly, m::any(&x)).allowExtraInputs().allowMultipleUses())
                   .allowExtraInputs();
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    Value* out = root.output();
    if (!x->shapeIsStatic() || !out->shapeIsStatic()) {
      return rw.notifyMatchFailure(root, "shapes along the chain are not static");
    }
    const Shape& shape = out->shape();
    Attributes attrs;
    // With allowzero unset a 0 in the shape input means "copy the input dim"; a real 0-sized dim
    // must be spelled with allowzero=1.
    if (std::count(shape.begin(), shape.end(), 0) > 0) attrs.set("allowzero", int64_t{1});
    Value* shape_const = rw.constant(int64Vector(shape), root.name() + "_shape");
    Node* merged = rw.createLike(*out, "Reshape", {x, shape_const}, attrs, root.name());
    rw.replaceOp(&root, {merged->output()});
    return success();
  }
};

class MergeReshapesPass : public PatternPass {
 public:
  const char* name() const override { return "merge_reshapes"; }
  const char* description() const override {
    return "merges Reshape/Squeeze/Unsqueeze/Flatten chains into one Reshape";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<MergeShapeChain>(); }
};

}  // namespace

std::unique_ptr<Pass> createMergeReshapesPass() {
  return std::make_unique<MergeReshapesPass>();
}

}  // namespace npuc
