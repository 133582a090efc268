// propagate_reshapes: moves Reshapes (and the other pure views: Squeeze, Unsqueeze, Flatten) across
// the ops that do not care how their rows are grouped, until they meet another view and merge
// (merge_reshapes) or cancel (canonicalize drops a Reshape to the same shape).
//
// The case it is for: exporters of transformers wrap every Linear on a [1, tokens, C] tensor in
// Reshape [tokens, C] -> Gemm -> Reshape [1, tokens, N] (fuse_matmul_bias writes the same), so
// the residual stream flips between rank 3 and rank 2 around each LayerNorm, Add and activation.
// After this pass the stream stays [tokens, C] from the patch embedding to the classifier head:
//
//   * view_through_transpose: View(Transpose(View(x))) -> Reshape(x) -> Transpose of the smallest
//     rank, when that Transpose already gives the outer view's shape (one view fewer);
//   * view_above_rowwise: View(LayerNorm/Softmax over the last axis) -> that op on the viewed input,
//     when the view keeps the last dim (rows are rows in either shape);
//   * view_through_binary: Add(View(a), View(b)) -> View(Add(a, b)) for same-shaped a and b, and
//     Add(x, View(o)) -> View(Add(V(x), o)) when x already has a view V to o's shape (reused, no new
//     op); the same for every elementwise binary op, operands in their order, no broadcasting;
//   * view_below_unary: U(View(x)) -> View(U(x)) for an elementwise unary U whose one reader is a
//     view (the two views then merge);
//   * view_into_reduce: Reduce(View(x)) or Reduce(LayerNorm/Softmax(View(x))), with a view that only
//     adds or drops axes of size 1, reduces x over the matching axes instead when that already gives
//     the output's shape (the classifier's token mean after the last LayerNorm).
// All of them move elements nowhere: bit-exact at every level.
#include <fmt/format.h>

#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/transpose_util.h"

namespace npuc {
namespace {

using fusion::isView;

// The producer of `v` if it is a view whose output only `v`'s one reader uses.
Node* soleView(const Value* v) {
  Node* p = v->producer();
  return isView(p) && m::interiorUseProblem(*v).empty() && p->input(0)->shapeIsStatic() ? p : nullptr;
}

Value* reshapeTo(Rewriter& rw, Value* x, const Shape& shape, const std::string& name) {
  return rw.create("Reshape", {x, rw.constant(int64Vector(shape), name + "_shape")}, {}, name)->output();
}

Node* reshapeLike(Rewriter& rw, const Value& like, Value* x, const std::string& name) {
  return rw.createLike(like, "Reshape", {x, rw.constant(int64Vector(like.shape()), name + "_shape")}, {},
                       name);
}

// ---------------------------------------------------------------- view_through_transpose

class ViewThroughTranspose : public RewritePattern {
 public:
  ViewThroughTranspose() : RewritePattern("view_through_transpose", opTypesWith(OpTrait::ShapeOnly)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* t = fusion::producerIs(root.input(0), "Transpose");
    if (!t || !m::interiorUseProblem(*t->output()).empty() || !root.output()->shapeIsStatic())
      return failure();
    Value* y = t->input(0);
    if (!soleView(y) || !y->shapeIsStatic()) return failure();
    const ReducedTranspose r = reduceTranspose(y->shape(), transposePerm(*t, y->rank()));
    if (permuted(r.shape, r.perm) != root.output()->shape()) return failure();
    rw.setInsertionPointBefore(&root);
    Value* view = reshapeTo(rw, y, r.shape, t->name());
    Attributes a;
    a.set("perm", r.perm);
    Node* smaller = rw.createLike(*root.output(), "Transpose", {view}, a, t->name());
    rw.replaceOp(&root, {smaller->output()});
    return success();
  }
};

// ---------------------------------------------------------------- view_above_rowwise

// True if `n` normalizes each row of its input's last axis on its own (LayerNormalization with
// axis = last, Softmax with axis = last: the same in every opset).
bool isLastAxisRowwise(const Node& n) {
  const Value* x = n.input(0);
  if (!x || !x->hasShape() || x->rank() == 0) return false;
  const int64_t last = x->rank() - 1;
  if (n.opType() == "LayerNormalization") {
    const int64_t axis = n.attrs().i("axis", -1);
    if (axis != -1 && axis != last) return false;
    for (size_t i = 1; i < n.numOutputs(); ++i)
      if (n.output(i)->numConsumers() != 0) return false;  // mean / inv std dev have the rows' shape
    return true;
  }
  if (n.opType() == "Softmax" || n.opType() == "LogSoftmax") {
    const int64_t axis = n.attrs().i("axis", -1);
    return axis == -1 || axis == last;
  }
  return false;
}

// The row-wise op `op` on `ins` (input 0 of shape `shape`), normalizing that shape's last axis.
Node* rowwiseOn(Rewriter& rw, const Node& op, const std::vector<Value*>& ins, const Shape& shape) {
  Attributes a = op.attrs();
  a.set("axis", static_cast<int64_t>(shape.size()) - 1);
  return rw.createCopy(op, ins, op.output()->dtype(), shape, a);
}

class ViewAboveRowwise : public RewritePattern {
 public:
  ViewAboveRowwise() : RewritePattern("view_above_rowwise", opTypesWith(OpTrait::ShapeOnly)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* op = root.input(0)->producer();
    if (!op || !isLastAxisRowwise(*op) || !m::interiorUseProblem(*root.input(0)).empty()) return failure();
    Value* x = op->input(0);
    const Value* out = root.output();
    if (!x->shapeIsStatic() || !out->shapeIsStatic() || out->rank() == 0 ||
        out->shape().back() != x->shape().back())
      return failure();
    rw.setInsertionPointBefore(&root);
    std::vector<Value*> ins = op->inputs();
    ins[0] = reshapeTo(rw, x, out->shape(), root.name());
    rw.replaceOp(&root, {rowwiseOn(rw, *op, ins, out->shape())->output()});
    return success();
  }
};

// ---------------------------------------------------------------- view_through_binary

// Another view of `x` to `shape`, already in the graph (not `except`).
Value* existingView(const Value& x, const Shape& shape, const Node* except) {
  for (const Use& u : x.uses()) {
    if (u.user != except && isView(u.user) && u.index == 0 && u.user->output()->shapeIsStatic() &&
        u.user->output()->shape() == shape)
      return u.user->output();
  }
  return nullptr;
}

class ViewThroughBinary : public RewritePattern {
 public:
  ViewThroughBinary() : RewritePattern("view_through_binary", opTypesWith(OpTrait::ElementwiseBinary)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (root.numInputs() != 2 || root.numOutputs() != 1 || !root.domain().empty()) return failure();
    Value* out = root.output();
    for (size_t i = 0; i < 2; ++i)
      if (!sameStaticShape(*root.input(i), *out)) return failure();  // no broadcasting
    Node* v0 = soleView(root.input(0));
    Node* v1 = soleView(root.input(1));
    std::vector<Value*> ins;
    if (v0 && v1 && sameStaticShape(*v0->input(0), *v1->input(0))) {
      ins = {v0->input(0), v1->input(0)};
    } else if (v0 || v1) {
      // One operand is a view of o; the other, x, must already have a view to o's shape.
      const size_t vi = v0 ? 0 : 1;
      Value* o = (v0 ? v0 : v1)->input(0);
      Value* other = existingView(*root.input(1 - vi), o->shape(), &root);
      if (!other) return failure();
      ins.resize(2);
      ins[vi] = o;
      ins[1 - vi] = other;
    } else {
      return failure();
    }
    rw.setInsertionPointBefore(&root);
    Node* moved =
        rw.createTyped(out->dtype(), ins[0]->shape(), root.opType(), ins, root.attrs(), root.name());
    rw.replaceOp(&root, {reshapeLike(rw, *out, moved->output(), root.name())->output()});
    return success();
  }
};

// ---------------------------------------------------------------- view_below_unary

class ViewBelowUnary : public RewritePattern {
 public:
  ViewBelowUnary() : RewritePattern("view_below_unary", opTypesWith(OpTrait::ElementwiseUnary)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* view = soleView(root.input(0));
    if (!view || root.numOutputs() != 1) return failure();
    for (size_t i = 1; i < root.numInputs(); ++i) {
      const Value* in = root.input(i);
      if (in && (!in->isConstant() || in->constant().numel() != 1)) return failure();
    }
    // Only toward a view it can merge with: otherwise the view would just change places.
    if (!isView(fusion::soleConsumer(root.output()))) return failure();
    Value* x = view->input(0);
    rw.setInsertionPointBefore(&root);
    std::vector<Value*> ins = root.inputs();
    ins[0] = x;
    Node* moved = rw.createCopy(root, ins, root.output()->dtype(), x->shape(), root.attrs());
    rw.replaceOp(&root, {reshapeLike(rw, *root.output(), moved->output(), root.name())->output()});
    return success();
  }
};

// ---------------------------------------------------------------- view_into_reduce

// For a view of `in` as `out` that only adds or drops axes of size 1: the axis of `in` each axis of
// `out` is (-1 for a size-1 axis of `out`); nullopt for any other view.
std::optional<std::vector<int64_t>> unitViewAxes(const Shape& in, const Shape& out) {
  std::vector<int64_t> map(out.size(), -1);
  size_t i = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    if (out[o] == 1) continue;
    while (i < in.size() && in[i] == 1) ++i;
    if (i == in.size() || in[i] != out[o]) return std::nullopt;
    map[o] = static_cast<int64_t>(i++);
  }
  while (i < in.size() && in[i] == 1) ++i;
  if (i != in.size()) return std::nullopt;
  return map;
}

class ViewIntoReduce : public RewritePattern {
 public:
  ViewIntoReduce() : RewritePattern("view_into_reduce", opTypesWith(OpTrait::AxesReduction)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* rowwise = root.input(0)->producer();
    if (rowwise && (!isLastAxisRowwise(*rowwise) || !m::interiorUseProblem(*root.input(0)).empty()))
      rowwise = nullptr;
    Node* view = soleView(rowwise ? rowwise->input(0) : root.input(0));
    const auto axes = fusion::reduceAxes(root);
    if (!view || !axes || !root.output()->shapeIsStatic() || root.numOutputs() != 1) return failure();
    Value* x = view->input(0);
    const Shape& viewed = view->output()->shape();
    const auto map = unitViewAxes(x->shape(), viewed);
    if (!map || (rowwise && x->shape().back() != viewed.back())) return failure();
    std::vector<int64_t> x_axes;
    for (int64_t a : *axes)
      if ((*map)[static_cast<size_t>(a)] >= 0) x_axes.push_back((*map)[static_cast<size_t>(a)]);
    Shape kept = x->shape();
    for (int64_t a : x_axes) kept[static_cast<size_t>(a)] = 1;
    if (x_axes.empty() || kept != root.output()->shape()) return failure();
    rw.setInsertionPointBefore(&root);
    Value* data = x;
    if (rowwise) {
      std::vector<Value*> ins = rowwise->inputs();
      ins[0] = x;
      data = rowwiseOn(rw, *rowwise, ins, x->shape())->output();
    }
    Attributes a = root.attrs();
    a.set("keepdims", int64_t{1});
    Node* reduce = rw.createCopy(root, {data, rw.constant(int64Vector(x_axes), root.name() + "_axes")},
                                 root.output()->dtype(), root.output()->shape(), a);
    rw.replaceOp(&root, {reduce->output()});
    return success();
  }
};

class PropagateReshapesPass : public PatternPass {
 public:
  const char* name() const override { return "propagate_reshapes"; }
  const char* description() const override {
    return "moves Reshapes across rowwise, elementwise and Transpose ops until they merge or cancel";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<ViewThroughTranspose>();
    p.add<ViewAboveRowwise>();
    p.add<ViewThroughBinary>();
    p.add<ViewBelowUnary>();
    p.add<ViewIntoReduce>();
  }
};

}  // namespace

std::unique_ptr<Pass> createPropagateReshapesPass() {
  return std::make_unique<PropagateReshapesPass>();
}

}  // namespace npuc
