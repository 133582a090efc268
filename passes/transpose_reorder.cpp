// transpose_reorder: moves elementwise work from after a Transpose to before it, so activations
// sit right after the Conv that produced their input (where the NPU fuses them) and Transposes
// drift together where compose_transposes can merge or cancel them:
//
//   U(Transpose(x, p))          -> Transpose(U(x), p)      U unary elementwise (Relu, Clip, ...)
//   B(Transpose(x, p), c)       -> Transpose(B(x, c'), p)  B binary elementwise, c constant,
//                                                          c' = c (rank-extended) transposed by p^-1
//
// Only when the Transpose's output has that one consumer: the number of Transposes never grows.
// Elementwise ops commute exactly with a permutation of their elements, so this is bit-exact.
#include <algorithm>
#include <cstring>

#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/transpose_util.h"

namespace npuc {
namespace {

class SinkTransposeBelowElementwise : public RewritePattern {
 public:
  SinkTransposeBelowElementwise() : RewritePattern("sink_transpose_below_elementwise", {}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    // Elementwise ops commute with a Transpose: a unary op's extra inputs (Clip's bounds) must be
    // scalars, a binary op's constant operand is permuted.
    const OpTraits& traits = opTraits(root);
    const bool unary = traits.has(OpTrait::ElementwiseUnary);
    if ((!unary && !traits.has(OpTrait::ElementwiseBinary)) || root.numOutputs() != 1) return failure();
    // The transposed operand: input 0 for unary ops, either input of a binary op.
    size_t t_index = 0;
    Node* transpose = fusion::producerIs(root.input(0), "Transpose");
    if (!unary && !transpose) {
      transpose = fusion::producerIs(root.input(1), "Transpose");
      t_index = 1;
    }
    if (!transpose || (root.opType() == "PRelu" && t_index != 0)) return failure();
    Value* x = transpose->input(0);
    Value* y = transpose->output();
    if (!x->shapeIsStatic() || !y->shapeIsStatic()) return failure();
    if (!sameStaticShape(*y, *root.output())) return failure();  // a constant broadcasts y up
    for (size_t i = 0; i < root.numInputs(); ++i) {
      const Value* in = root.input(i);
      if (i == t_index || !in) continue;
      if (!in->isConstant() || in->rank() > y->rank() || (unary && in->constant().numel() != 1))
        return failure();
    }
    if (y->uses().size() != 1 || y->isGraphOutput()) {
      return rw.notifyMatchFailure(root, "Transpose '" + transpose->name() + "' is not moved below '" +
                                             root.name() + "': its output has other users");
    }
    std::vector<Value*> ins = root.inputs();
    ins[t_index] = x;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (i == t_index || !ins[i] || unary) continue;
      ins[i] = rw.constant(transposedConstant(ins[i]->constant(), y->rank(),
                                              inversePerm(transposePerm(*transpose, x->rank()))),
                           ins[i]->name() + "_transposed");
    }
    rw.setInsertionPointBefore(&root);
    Node* moved = rw.createCopy(root, ins, root.output()->dtype(), x->shape(), root.attrs());
    Node* t =
        rw.createLike(*root.output(), "Transpose", {moved->output()}, transpose->attrs(), transpose->name());
    rw.replaceOp(&root, {t->output()});
    return success();
  }
};

class TransposeReorderPass : public PatternPass {
 public:
  const char* name() const override { return "transpose_reorder"; }
  const char* description() const override {
    return "moves elementwise ops above Transposes (activations next to their Conv, Transposes together)";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<SinkTransposeBelowElementwise>(); }
};

}  // namespace

std::unique_ptr<Pass> createTransposeReorderPass() {
  return std::make_unique<TransposeReorderPass>();
}

}  // namespace npuc
