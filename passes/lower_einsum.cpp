// lower_einsum: an Einsum the NPU can run as plain tensor ops becomes them, so attention written
// with torch.einsum leaves the CPU-only Einsum op:
//
//   one input   "bhqd->bhdq", "bij->bj"   : ReduceSum over the labels not in the output, then a
//                                           Transpose into output order;
//   two inputs  "bhqd,bhkd->bhqk",
//               "bhqk,bhkd->bhqd", "bij,bjk->bik", "ij,jk->ik", "bid,jd->bij", ...
//     labels are batch (both inputs and output), m (A and output), n (B and output) or k (both
//     inputs, not the output); a label in one input only and not the output is summed first.
//     A is transposed to [batch, m, k] and reshaped to [batch..., M, K], B to [batch..., K, N],
//     one MatMul, then a Reshape to [batch..., m..., n...] and a Transpose to the output order.
//     More than two batch labels merge into one batch dim, so the MatMul stays rank <= 4.
//     Transposes and Reshapes that would change nothing are not created.
//
// Refused (the Einsum stays on the CPU, with the reason recorded): a repeated label in one term
// (a diagonal), three or more inputs, a batch label whose size differs between the inputs
// (broadcast), non-float32 inputs, unknown shapes. The MatMul sums in another order than the
// Einsum kernel's double accumulator, so the pattern changes the last bits: level 3 only.
#include <algorithm>

#include "opset/ops/attn_einsum.h"
#include "opset/registry.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

using attn::EinsumSpec;
using Labels = std::vector<int>;

bool contains(const Labels& v, int l) {
  return std::find(v.begin(), v.end(), l) != v.end();
}

class LowerEinsum : public RewritePattern {
 public:
  LowerEinsum() : RewritePattern("lower_einsum", {"Einsum"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root, "Einsum '" + root.name() + "' (\"" + root.attrs().s("equation", "") +
                                             "\") stays on the CPU: " + why);
    };
    if (root.numInputs() < 1 || root.numInputs() > 2)
      return refuse("only 1- and 2-input equations are lowered");
    std::vector<Shape> shapes;
    for (const Value* v : root.inputs()) {
      if (!v || !v->shapeIsStatic()) return refuse("an input shape is not static");
      if (v->dtype() != DType::Float32) return refuse("inputs are not float32");
      shapes.push_back(v->shape());
    }
    if (!root.output()->shapeIsStatic()) return refuse("the output shape is not static");
    EinsumSpec spec;
    try {
      spec = attn::parseEinsum(root.attrs().s("equation"), shapes, "Einsum node '" + root.name() + "'");
    } catch (const Error& e) {
      return refuse(e.what());
    }
    for (size_t t = 0; t < spec.inputs.size(); ++t) {
      if (attn::hasRepeatedLabel(spec.inputs[t]))
        return refuse("input " + std::to_string(t) + " repeats a label (a diagonal)");
      for (size_t d = 0; d < spec.inputs[t].size(); ++d)
        if (shapes[t][d] != spec.size[static_cast<size_t>(spec.inputs[t][d])])
          return refuse("label '" + attn::labelName(spec.inputs[t][d]) + "' broadcasts a size-1 dim");
    }
    if (spec.inputs.size() == 1 && spec.inputs[0] == spec.output &&
        !rw.canReplace(*root.output(), *root.input(0)))
      return refuse("it copies a graph input to a graph output");
    rw.setInsertionPointBefore(&root);
    Value* out = spec.inputs.size() == 1 ? lowerUnary(rw, root, spec) : lowerBinary(rw, root, spec);
    rw.replaceOp(&root, {out});
    return success();
  }

 private:
  static Value* transpose(Rewriter& rw, Value* x, Labels& labels, const Labels& order,
                          const std::string& hint) {
    std::vector<int64_t> perm;
    for (int l : order) perm.push_back(std::find(labels.begin(), labels.end(), l) - labels.begin());
    labels = order;
    if (isIdentityPerm(perm)) return x;
    Attributes a;
    a.set("perm", perm);
    return rw.create("Transpose", {x}, a, hint)->output();
  }

  static Value* reshape(Rewriter& rw, Value* x, const Shape& shape, const std::string& hint) {
    if (x->shape() == shape) return x;
    return rw.create("Reshape", {x, rw.constant(int64Vector(shape), hint + "_shape")}, {}, hint)->output();
  }

  // ReduceSum (keepdims=0) over the labels of `labels` that `keep` says go.
  template <typename Keep>
  static Value* sumAway(Rewriter& rw, Value* x, Labels& labels, Keep keep, const std::string& hint) {
    std::vector<int64_t> axes;
    Labels kept;
    for (size_t d = 0; d < labels.size(); ++d) {
      if (keep(labels[d])) {
        kept.push_back(labels[d]);
      } else {
        axes.push_back(static_cast<int64_t>(d));
      }
    }
    if (axes.empty()) return x;
    Attributes a;
    a.set("keepdims", int64_t{0});
    labels = kept;
    return rw.create("ReduceSum", {x, rw.constant(int64Vector(axes), hint + "_axes")}, a, hint)->output();
  }

  static Value* lowerUnary(Rewriter& rw, Node& root, const EinsumSpec& spec) {
    Labels labels = spec.inputs[0];
    Value* x = sumAway(
        rw, root.input(0), labels, [&](int l) { return contains(spec.output, l); }, root.name());
    return transpose(rw, x, labels, spec.output, root.name());
  }

  static Value* lowerBinary(Rewriter& rw, Node& root, const EinsumSpec& spec) {
    Labels la = spec.inputs[0], lb = spec.inputs[1];
    const Labels& out = spec.output;
    Labels batch, m, n, k;
    for (int l : out) {
      if (contains(la, l) && contains(lb, l))
        batch.push_back(l);
      else if (contains(la, l))
        m.push_back(l);
      else
        n.push_back(l);
    }
    for (int l : la)
      if (contains(lb, l) && !contains(out, l)) k.push_back(l);
    const std::string& nm = root.name();
    // Labels in one input only and not in the output are summed away before the product.
    Value* a = sumAway(
        rw, root.input(0), la, [&](int l) { return contains(out, l) || contains(lb, l); }, nm + "_a");
    Value* b = sumAway(
        rw, root.input(1), lb, [&](int l) { return contains(out, l) || contains(la, l); }, nm + "_b");
    auto sizeOf = [&](const Labels& ls) {
      int64_t s = 1;
      for (int l : ls) s *= spec.size[static_cast<size_t>(l)];
      return s;
    };
    Shape batch_shape;
    for (int l : batch) batch_shape.push_back(spec.size[static_cast<size_t>(l)]);
    auto concat = [](Labels x, const Labels& y) {
      x.insert(x.end(), y.begin(), y.end());
      return x;
    };
    a = transpose(rw, a, la, concat(concat(batch, m), k), nm + "_a");
    b = transpose(rw, b, lb, concat(concat(batch, k), n), nm + "_b");
    // More than two batch labels would make a rank-5+ MatMul (NPUs cap MatMul at rank 4): the
    // batch dims merge into one, which the transposes above made contiguous.
    Shape mm_batch = batch_shape;
    if (batch.size() > 2) mm_batch = {sizeOf(batch)};
    Shape sa = mm_batch, sb = mm_batch;
    sa.insert(sa.end(), {sizeOf(m), sizeOf(k)});
    sb.insert(sb.end(), {sizeOf(k), sizeOf(n)});
    a = reshape(rw, a, sa, nm + "_a");
    b = reshape(rw, b, sb, nm + "_b");
    Value* y = rw.create("MatMul", {a, b}, {}, nm)->output();
    Labels ly = concat(concat(batch, m), n);
    Shape sy = batch_shape;
    for (int l : concat(m, n)) sy.push_back(spec.size[static_cast<size_t>(l)]);
    y = reshape(rw, y, sy, nm + "_y");
    return transpose(rw, y, ly, out, nm + "_y");
  }
};

class LowerEinsumPass : public PatternPass {
 public:
  const char* name() const override { return "lower_einsum"; }
  const char* description() const override {
    return "Einsum batched-matmul / transpose / reduction equations -> MatMul, Transpose, Reshape, ReduceSum";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<LowerEinsum>(); }
};

}  // namespace

std::unique_ptr<Pass> createLowerEinsumPass() {
  return std::make_unique<LowerEinsumPass>();
}

}  // namespace npuc
