// canonicalize: rewrites equivalent spellings of the same computation into one form, so every
// later pattern has one shape to match. The canonical forms:
//   * constants are the trailing operands of commutative ops (Add(c, x) -> Add(x, c));
//   * Pow(x, 2) -> Mul(x, x); Div(1, x) -> Reciprocal(x) (both bit-exact in IEEE arithmetic);
//   * 1/sqrt(x) is Reciprocal(Sqrt(x)) and x/sqrt(y) stays Div(x, Sqrt(y)): no Rsqrt op exists, and
//     turning a division into a reciprocal multiply changes rounding;
//   * Div(x, c) -> Mul(x, 1/c) for a float constant c, only at optimization_level 3 (rounding);
//   * Reduce* axes are a constant input, non-negative, sorted and unique; empty axes become the
//     explicit list of all axes, or the node disappears when noop_with_empty_axes says it is one;
//   * `axis` attributes are non-negative;
//   * no-ops are removed: Identity, Dropout in inference, Cast to the same dtype, Expand / Reshape
//     to the same shape, identity Transpose, Slice taking everything, single-input Concat;
//   * a Transpose that moves only axes of size 1 (e.g. [1, 64, 64] perm (1, 0, 2)) moves no element:
//     it is a Reshape, which merge_reshapes can merge with its neighbours.
#include <algorithm>

#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/transpose_util.h"

namespace npuc {
namespace {

bool isFloatValue(const Value& v) {
  return isFloating(v.dtype());
}

// ---------------------------------------------------------------- constants to the right

class ConstantsLast : public RewritePattern {
 public:
  // Only commutative ops may reorder their operands.
  ConstantsLast() : RewritePattern("constants_last", opTypesWith(OpTrait::Commutative)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    std::vector<Value*> ins = root.inputs();
    auto is_const = [](const Value* v) { return v && v->isConstant(); };
    // Already canonical when no constant precedes a non-constant.
    auto first_const = std::find_if(ins.begin(), ins.end(), is_const);
    if (std::find_if_not(first_const, ins.end(), is_const) == ins.end()) return failure();
    std::stable_partition(ins.begin(), ins.end(), [&](const Value* v) { return !is_const(v); });
    for (size_t i = 0; i < ins.size(); ++i) root.setInput(i, ins[i]);
    rw.notifyModified(&root);
    return success();
  }
};

// ---------------------------------------------------------------- Pow / Div spellings

// Pow(x, 2) -> Mul(x, x). x*x is the correctly rounded square, as is powf(x, 2).
class PowSquareToMul : public RewritePattern {
 public:
  PowSquareToMul() : RewritePattern("pow_square_to_mul", {"Pow"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    auto pat = m::op("Pow", m::any(&x), m::scalarConstant(2.0));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    // A [1,1,1] exponent could broadcast x to a higher rank; Mul(x, x) would not.
    if (!isFloatValue(*x) || !sameType(*x, *root.output())) return failure();
    Node* mul = rw.createLike(*root.output(), "Mul", {x, x}, {}, root.name());
    rw.replaceOp(&root, {mul->output()});
    return success();
  }
};

// Div(1, x) -> Reciprocal(x): IEEE division of 1 by x is exactly what Reciprocal computes.
class DivOneToReciprocal : public RewritePattern {
 public:
  DivOneToReciprocal() : RewritePattern("div_one_to_reciprocal", {"Div"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    auto pat = m::op("Div", m::scalarConstant(1.0), m::any(&x));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    if (!isFloatValue(*x) || !sameType(*x, *root.output())) return failure();
    Node* rec = rw.createLike(*root.output(), "Reciprocal", {x}, {}, root.name());
    rw.replaceOp(&root, {rec->output()});
    return success();
  }
};

// Div(x, c) -> Mul(x, 1/c). Multiplying by a rounded reciprocal can differ from the division in
// the last bit, hence level 3 only.
class DivByConstantToMul : public RewritePattern {
 public:
  DivByConstantToMul() : RewritePattern("div_by_constant_to_mul", {"Div"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value *x = nullptr, *c = nullptr;
    auto pat = m::op("Div", m::any(&x), m::constant(&c));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    if (x->isConstant() || c->dtype() != DType::Float32) return failure();  // all-constant: folding's job
    Tensor rc(DType::Float32, c->constant().shape());
    const float* src = c->constant().data<float>();
    float* dst = rc.data<float>();
    for (int64_t i = 0; i < rc.numel(); ++i) dst[i] = 1.0f / src[i];
    Value* rcv = rw.constant(std::move(rc), c->name() + "_reciprocal");
    Node* mul = rw.createLike(*root.output(), "Mul", {x, rcv}, {}, root.name());
    rw.replaceOp(&root, {mul->output()});
    return success();
  }
};

// ---------------------------------------------------------------- axes

class NormalizeReduceAxes : public RewritePattern {
 public:
  NormalizeReduceAxes() : RewritePattern("normalize_reduce_axes", opTypesWith(OpTrait::AxesReduction)) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* data = root.input(0);
    if (!data || !data->hasShape()) return failure();
    const int64_t rank = data->rank();
    std::vector<int64_t> axes;
    if (Value* axes_in = root.input(1)) {
      auto c = constantInts(axes_in);
      if (!c) return rw.notifyMatchFailure(root, "axes '" + axes_in->name() + "' is not a constant");
      axes = *c;
    }
    const bool noop_with_empty = root.attrs().i("noop_with_empty_axes", 0) != 0;
    if (axes.empty() && noop_with_empty) return removeAsNoOp(root, rw);
    if (axes.empty()) {
      axes.resize(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) axes[static_cast<size_t>(i)] = i;
    }
    auto norm = normalizedAxes(axes, rank);
    if (!norm) return rw.notifyMatchFailure(root, "axes out of range for rank " + std::to_string(rank));
    const bool axes_canonical = root.input(1) && constantInts(root.input(1)) == norm;
    if (axes_canonical && !root.attrs().has("noop_with_empty_axes")) return failure();
    // With explicit non-empty axes the attribute has no effect; dropping it leaves one spelling.
    root.attrs().erase("noop_with_empty_axes");
    if (!axes_canonical) root.setInput(1, rw.constant(int64Vector(*norm), root.name() + "_axes"));
    rw.notifyModified(&root);
    return success();
  }

 private:
  static LogicalResult removeAsNoOp(Node& root, Rewriter& rw) {
    Value* data = root.input(0);
    if (!sameType(*data, *root.output()) || !rw.canReplace(*root.output(), *data)) {
      return rw.notifyMatchFailure(root,
                                   "reduction over no axes is a no-op, but its output cannot be bypassed");
    }
    rw.replaceOp(&root, {data});
    return success();
  }
};

// Negative `axis` attributes become non-negative. Flatten's axis may equal the rank.
class NormalizeAxisAttribute : public RewritePattern {
 public:
  NormalizeAxisAttribute()
      : RewritePattern("normalize_axis_attribute",
                       {"Concat", "Softmax", "LogSoftmax", "Hardmax", "Gather", "GatherElements", "Split",
                        "ArgMax", "ArgMin", "Flatten"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const AttrValue* a = root.attrs().find("axis");
    Value* data = root.input(0);
    if (!a || !std::holds_alternative<int64_t>(*a) || !data || !data->hasShape()) return failure();
    const int64_t axis = std::get<int64_t>(*a);
    if (axis >= 0) return failure();
    const int64_t rank = data->rank() + (root.opType() == "Flatten" ? 1 : 0);
    if (axis + rank < 0)
      return rw.notifyMatchFailure(root, "axis " + std::to_string(axis) + " is out of range");
    root.attrs().set("axis", axis + rank);
    rw.notifyModified(&root);
    return success();
  }
};

// ---------------------------------------------------------------- no-ops

bool allOnes(const std::optional<std::vector<int64_t>>& v) {
  return v && std::all_of(v->begin(), v->end(), [](int64_t s) { return s == 1; });
}

// Whether `node` returns input 0 unchanged (type equality is checked by the caller).
bool isNoOp(const Node& n) {
  const std::string& op = n.opType();
  if (op == "Identity") return true;
  if (op == "Cast") return n.attrs().i("to", 0) == static_cast<int64_t>(n.input(0)->dtype());
  if (op == "Dropout") {
    // Inference-mode Dropout is the identity; its optional mask output must be unused.
    const Value* training = n.input(2);
    const bool inference = !training || (scalarValue(training) && *scalarValue(training) == 0.0);
    return inference && (n.numOutputs() < 2 || (!n.output(1)->hasUses() && !n.output(1)->isGraphOutput()));
  }
  if (op == "Expand" || op == "Reshape") return true;  // same shape, checked by the caller
  if (op == "Transpose") return isIdentityPerm(transposePerm(n, n.input(0)->rank()));
  if (op == "Slice") return !n.input(4) || allOnes(constantInts(n.input(4)));
  if (op == "Concat") return n.numInputs() == 1;
  return false;
}

class RemoveNoOp : public RewritePattern {
 public:
  RemoveNoOp()
      : RewritePattern("remove_no_op",
                       {"Identity", "Cast", "Dropout", "Expand", "Reshape", "Transpose", "Slice", "Concat"}) {
  }

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* in = root.input(0);
    Value* out = root.output(0);
    if (!in || !sameType(*in, *out) || !isNoOp(root)) return failure();
    if (!rw.canReplace(*out, *in)) {
      return rw.notifyMatchFailure(root, "no-op whose output '" + out->name() +
                                             "' is a graph output that its input cannot stand in for");
    }
    std::vector<Value*> repl(root.numOutputs(), nullptr);
    repl[0] = in;
    rw.replaceOp(&root, repl);
    return success();
  }
};

// ---------------------------------------------------------------- Transposes that are Reshapes

class UnitTransposeToReshape : public RewritePattern {
 public:
  UnitTransposeToReshape() : RewritePattern("unit_transpose_to_reshape", {"Transpose"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = root.input(0);
    Value* y = root.output();
    // An empty tensor's Reshape would need allowzero; nothing is gained there.
    if (!x || !x->shapeIsStatic() || !y->shapeIsStatic() || shapeNumel(x->shape()) == 0) return failure();
    const std::vector<int64_t> perm = transposePerm(root, x->rank());
    if (isIdentityPerm(perm) || !isIdentityPerm(reduceTranspose(x->shape(), perm).perm)) return failure();
    Value* shape = rw.constant(int64Vector(y->shape()), root.name() + "_shape");
    rw.setInsertionPointBefore(&root);
    Node* reshape = rw.createLike(*y, "Reshape", {x, shape}, {}, root.name());
    rw.replaceOp(&root, {reshape->output()});
    return success();
  }
};

class CanonicalizePass : public PatternPass {
 public:
  const char* name() const override { return "canonicalize"; }
  const char* description() const override {
    return "one spelling per computation: constants last, no-ops removed, axes normalized";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<ConstantsLast>();
    p.add<PowSquareToMul>();
    p.add<DivOneToReciprocal>();
    p.add<DivByConstantToMul>();
    p.add<NormalizeReduceAxes>();
    p.add<NormalizeAxisAttribute>();
    p.add<RemoveNoOp>();
    p.add<UnitTransposeToReshape>();
  }
};

}  // namespace

std::unique_ptr<Pass> createCanonicalizePass() {
  return std::make_unique<CanonicalizePass>();
}

}  // namespace npuc
