// hoist_transposes: upward Transpose motion. transpose_reorder moves a Transpose down past
// elementwise ops, but only when nothing else reads it; a Transpose whose input has other readers
// stays, and the inverse Transpose below the elementwise op cannot reach it:
//
//   y = Transpose(x, p0)  (also read elsewhere)      y = Transpose(x, p0)   (for the other readers)
//   z = E(y, c)                                  ->  z = E(Transpose(y, p), c')  = E(x, c') when p
//   w = Transpose(z, p)                                                       undoes p0
//
// The moved Transpose reads the upper one's input through the composed permutation (nothing when
// they cancel). E is an elementwise unary op (its extra operands scalars) or a binary op whose other
// operand is a constant, permuted by p (c' = Transpose(c, p)). Only when E's output has that one
// reader, so the Transpose count never grows. Elementwise ops commute exactly with a permutation of
// their elements: bit-exact.
#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/transpose_util.h"

namespace npuc {
namespace {

class HoistTransposeAboveElementwise : public RewritePattern {
 public:
  HoistTransposeAboveElementwise() : RewritePattern("hoist_transpose_above_elementwise", {"Transpose"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* e = root.input(0)->producer();
    if (!e || e->numOutputs() != 1 || !m::interiorUseProblem(*e->output()).empty()) return failure();
    const OpTraits& traits = opTraits(*e);
    const bool unary = traits.has(OpTrait::ElementwiseUnary);
    if (!unary && !traits.has(OpTrait::ElementwiseBinary)) return failure();
    Value* y = e->input(0);
    Node* upper = fusion::producerIs(y, "Transpose");
    if (!upper || !y->shapeIsStatic() || !sameStaticShape(*y, *e->output())) return failure();
    for (size_t i = 1; i < e->numInputs(); ++i) {
      const Value* c = e->input(i);
      if (c && (!c->isConstant() || c->rank() > y->rank() || (unary && c->constant().numel() != 1)))
        return failure();
    }
    if (e->opType() == "PRelu") return failure();  // its slope broadcasts by channel rules of its own
    const std::vector<int64_t> perm = transposePerm(root, y->rank());
    // The upper Transpose has other readers (or transpose_reorder would have sunk it), so read its
    // input through the composed permutation: perm[i] of upper's output is upper_perm[perm[i]].
    Value* x = upper->input(0);
    const std::vector<int64_t> upper_perm = transposePerm(*upper, x->rank());
    std::vector<int64_t> composed(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) composed[i] = upper_perm[static_cast<size_t>(perm[i])];
    rw.setInsertionPointBefore(&root);
    Value* moved = x;
    if (!isIdentityPerm(composed)) {
      Attributes a;
      a.set("perm", composed);
      moved = rw.create("Transpose", {x}, a, root.name())->output();
    }
    std::vector<Value*> ins = e->inputs();
    ins[0] = moved;
    for (size_t i = 1; i < ins.size(); ++i) {
      if (!ins[i] || unary) continue;
      ins[i] = rw.constant(transposedConstant(ins[i]->constant(), y->rank(), perm),
                           ins[i]->name() + "_transposed");
    }
    Node* op = rw.createCopy(*e, ins, root.output()->dtype(), root.output()->shape(), e->attrs());
    rw.replaceOp(&root, {op->output()});
    return success();
  }
};

class HoistTransposesPass : public PatternPass {
 public:
  const char* name() const override { return "hoist_transposes"; }
  const char* description() const override {
    return "moves a Transpose up past an elementwise op to a Transpose it composes with";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<HoistTransposeAboveElementwise>(); }
};

}  // namespace

std::unique_ptr<Pass> createHoistTransposesPass() {
  return std::make_unique<HoistTransposesPass>();
}

}  // namespace npuc
