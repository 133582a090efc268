// fuse_layernorm: decomposed normalizations, as exporters write them, become one op.
//
//   LayerNorm   d = X - ReduceMean(X, A);  v = ReduceMean(d*d | Pow(d, 2), A)
//               y = d / Sqrt(v + eps)  |  d * Reciprocal(Sqrt(v + eps))
//               [Cast back] [* gamma] [+ beta]
//            -> LayerNormalization(X, gamma or ones, beta or absent; axis = first of A, epsilon)
//               [Cast after it, with gamma/beta cast to float32 first]
//   RMSNorm     y = X / Sqrt(ReduceMean(X*X, A) + eps)  |  X * Reciprocal(Sqrt(...))   [* gamma]
//            -> ai.npuc RMSNorm(X, gamma or ones; axis, epsilon)
//
// The pattern is rooted at the normalizing Div / Mul and walks up the statistics and down the
// optional affine tail. Refusals worth a user's attention are recorded ("LayerNorm at node 'n'
// not fused: ..."): keepdims=0, an exponent other than 2, reductions over different or
// non-trailing axes, a gamma/beta whose shape is not the normalized shape, or an interior value
// that something else also reads. The fused kernels compute mean and variance in another order
// than the decomposed graph, so results may differ in the last bits: level 3 only.
#include <algorithm>

#include "opset/registry.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"

namespace npuc {
namespace {

using fusion::producerIs;
using fusion::soleConsumer;

// The statistics half both norms share: numerator / Sqrt(ReduceMean(square) + eps).
struct NormCore {
  Node* norm = nullptr;  // Div(numerator, sqrt) or Mul(numerator, Reciprocal(sqrt))
  Value* numerator = nullptr;
  Node* square = nullptr;     // Mul(n, n) or Pow(n, 2)
  Node* mean_sq = nullptr;    // ReduceMean(square)
  std::vector<int64_t> axes;  // normalized axes of mean_sq
  double epsilon = 0.0;
  std::vector<Value*> interior;  // values absorbed by the fusion (must have one consumer)
};

// The optional tail after the normalizing op: [Cast] [Mul gamma] [Add beta].
struct AffineTail {
  Node* cast = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  Node* last = nullptr;  // the node whose output the fused op replaces
  std::vector<Value*> interior;
};

// The value the square node squares, or null if `sq` is not x*x / Pow(x, 2). Sets `why` when the
// node is a Pow with an exponent other than 2.
Value* squaredValue(const Node& sq, std::string& why) {
  if (sq.opType() == "Mul" && sq.numInputs() == 2 && sq.input(0) == sq.input(1)) return sq.input(0);
  if (sq.opType() == "Pow" && sq.numInputs() == 2) {
    const auto e = fusion::floatScalar(sq.input(1));
    if (e && *e == 2.0) return sq.input(0);
    why = "the exponent of '" + sq.name() + "' is not 2";
  }
  return nullptr;
}

// Trailing axes [rank-k, rank) with k >= 1.
bool areTrailing(const std::vector<int64_t>& axes, int64_t rank) {
  if (axes.empty()) return false;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return false;
  }
  return true;
}

// Matches numerator / Sqrt(ReduceMean(square) + eps) at `root`. Returns false quietly when the
// root is not such a node; sets `why` when the shape is right but a detail forbids the fusion.
bool matchNormCore(Node& root, NormCore& c, std::string& why) {
  if (root.numInputs() != 2 || !fusion::isStaticFloat32(root.output())) return false;
  Node* sqrt = nullptr;
  Node* recip = nullptr;
  if (root.opType() == "Div") {
    sqrt = producerIs(root.input(1), "Sqrt");
    c.numerator = root.input(0);
  } else if (root.opType() == "Mul") {
    for (size_t i = 0; i < 2 && !recip; ++i) {
      recip = producerIs(root.input(i), "Reciprocal");
      if (recip) c.numerator = root.input(1 - i);
    }
    sqrt = recip ? producerIs(recip->input(0), "Sqrt") : nullptr;
  }
  if (!sqrt) return false;
  Node* add = producerIs(sqrt->input(0), "Add");
  if (!add) return false;
  Value* eps = nullptr;
  for (size_t i = 0; i < 2 && !c.mean_sq; ++i) {
    c.mean_sq = producerIs(add->input(i), "ReduceMean");
    eps = add->input(1 - i);
  }
  if (!c.mean_sq) return false;
  c.square = c.mean_sq->input(0) ? c.mean_sq->input(0)->producer() : nullptr;
  if (!c.square || squaredValue(*c.square, why) != c.numerator) {
    if (why.empty()) why = "the variance does not square the normalized value";
    return false;
  }
  const auto e = fusion::floatScalar(eps);
  if (!e || *e < 0.0) {
    why = "epsilon '" + (eps ? eps->name() : std::string("?")) + "' is not a non-negative scalar constant";
    return false;
  }
  c.epsilon = *e;
  if (c.mean_sq->attrs().i("keepdims", 1) == 0) {
    why = "ReduceMean '" + c.mean_sq->name() + "' has keepdims=0";
    return false;
  }
  const auto axes = fusion::reduceAxes(*c.mean_sq);
  if (!axes || !areTrailing(*axes, c.numerator->rank())) {
    why = "ReduceMean '" + c.mean_sq->name() + "' does not reduce constant trailing axes";
    return false;
  }
  c.axes = *axes;
  c.norm = &root;
  c.interior = {c.square->output(), c.mean_sq->output(), add->output(), sqrt->output()};
  if (recip) c.interior.push_back(recip->output());
  return true;
}

// Shape of the normalized dims of `x` for trailing `axes`.
Shape normalizedShape(const Value& x, const std::vector<int64_t>& axes) {
  return Shape(x.shape().end() - static_cast<std::ptrdiff_t>(axes.size()), x.shape().end());
}

// `c` as a float32 tensor of exactly `shape`, accepting leading size-1 dims and one-element
// constants (broadcast). Empty optional with `why` set if the shapes do not agree.
std::optional<Tensor> perElement(const Value& c, const Shape& shape, const char* what, std::string& why) {
  const Tensor& t = c.constant();
  Tensor f = t.dtype() == DType::Float32 ? t : t.castTo(DType::Float32);
  if (t.numel() == 1) {
    Tensor full(DType::Float32, shape);
    std::fill(full.data<float>(), full.data<float>() + full.numel(), static_cast<float>(f.doubleAt(0)));
    return full;
  }
  Shape stripped = t.shape();
  while (stripped.size() > shape.size() && stripped.front() == 1) stripped.erase(stripped.begin());
  if (stripped != shape) {
    why = std::string(what) + " shape " + shapeStr(t.shape()) + " != normalized shape " + shapeStr(shape);
    return std::nullopt;
  }
  return f.reshaped(shape);
}

// Walks [Cast to a float type] [Mul constant] [Add constant] below `from` (one consumer each).
AffineTail matchAffineTail(Node& from, bool allow_beta) {
  AffineTail t;
  t.last = &from;
  auto next = [&](const char* op) -> Node* {
    Node* n = soleConsumer(t.last->output());
    return n && n->opType() == op && n->domain().empty() ? n : nullptr;
  };
  if (Node* cast = next("Cast"); cast && isFloating(fusion::castTarget(*cast))) {
    t.interior.push_back(t.last->output());
    t.cast = t.last = cast;
  }
  if (Node* mul = next("Mul")) {
    Value* g = fusion::otherOperand(*mul, t.last->output());
    if (g && g->isConstant() && isFloating(g->dtype())) {
      t.interior.push_back(t.last->output());
      t.gamma = g;
      t.last = mul;
    }
  }
  if (Node* add = allow_beta && t.gamma ? next("Add") : nullptr) {
    Value* b = fusion::otherOperand(*add, t.last->output());
    if (b && b->isConstant() && isFloating(b->dtype())) {
      t.interior.push_back(t.last->output());
      t.beta = b;
      t.last = add;
    }
  }
  return t;
}

std::string firstInteriorProblem(const std::vector<Value*>& values) {
  for (const Value* v : values) {
    std::string p = m::interiorUseProblem(*v);
    if (!p.empty()) return p;
  }
  return std::string();
}

// Builds `op(x, scale[, bias])`, then the tail's Cast if it had one, and replaces the tail.
LogicalResult emitFused(const NormCore& c, const AffineTail& t, Value* x, const std::string& op,
                        const std::string& kind, Rewriter& rw) {
  Value* out = t.last->output();
  std::string why;
  const Shape norm_shape = normalizedShape(*x, c.axes);
  auto refuse = [&](const std::string& reason) {
    return rw.notifyMatchFailure(*c.norm, kind + " at node '" + c.norm->name() + "' not fused: " + reason);
  };
  std::optional<Tensor> scale = t.gamma ? perElement(*t.gamma, norm_shape, "gamma", why) : std::nullopt;
  if (!why.empty()) return refuse(why);
  std::optional<Tensor> bias = t.beta ? perElement(*t.beta, norm_shape, "beta", why) : std::nullopt;
  if (!why.empty()) return refuse(why);
  if (!scale) {
    scale = Tensor(DType::Float32, norm_shape);
    std::fill(scale->data<float>(), scale->data<float>() + scale->numel(), 1.0f);
  }
  if (!sameStaticShape(*c.norm->output(), *out)) return refuse("the affine part changes the result shape");
  rw.setInsertionPointBefore(t.last);
  std::vector<Value*> ins = {x, rw.constant(std::move(*scale), c.norm->name() + "_scale")};
  if (bias) ins.push_back(rw.constant(std::move(*bias), c.norm->name() + "_bias"));
  Attributes a;
  a.set("axis", x->rank() - static_cast<int64_t>(c.axes.size()));
  a.set("epsilon", static_cast<float>(c.epsilon));
  Node* fused =
      op == "LayerNormalization"
          ? rw.createLike(*c.norm->output(), op, ins, a, c.norm->name())
          : fusion::createNpucOp(rw, DType::Float32, c.norm->output()->shape(), op, ins, a, c.norm->name());
  Value* result = fused->output();
  if (t.cast) {
    Attributes to;
    to.set("to", static_cast<int64_t>(fusion::castTarget(*t.cast)));
    result = rw.createLike(*out, "Cast", {result}, to, t.cast->name())->output();
  }
  rw.replaceOp(t.last, {result});
  return success();
}

class FuseNorm : public RewritePattern {
 public:
  FuseNorm() : RewritePattern("fuse_norm", {"Div", "Mul"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    NormCore c;
    std::string why;
    const bool matched = matchNormCore(root, c, why);
    // LayerNorm when the numerator is X - ReduceMean(X); any other numerator is RMS-normalized.
    Node* sub = producerIs(c.numerator, "Sub");
    Node* mean = sub ? producerIs(sub->input(1), "ReduceMean") : nullptr;
    if (!mean || mean->input(0) != sub->input(0)) sub = nullptr;
    const std::string kind = sub ? "LayerNorm" : "RMSNorm";
    auto refuse = [&](const std::string& reason) {
      return rw.notifyMatchFailure(root, kind + " at node '" + root.name() + "' not fused: " + reason);
    };
    if (!matched) return why.empty() ? failure() : refuse(why);
    return sub ? fuseLayerNorm(c, *sub, refuse, rw) : fuseRmsNorm(c, refuse, rw);
  }

 private:
  template <typename Refuse>
  static LogicalResult fuseLayerNorm(NormCore& c, Node& sub, Refuse refuse, Rewriter& rw) {
    Value* x = sub.input(0);
    Node* mean = producerIs(sub.input(1), "ReduceMean");
    if (mean->attrs().i("keepdims", 1) == 0)
      return refuse("ReduceMean '" + mean->name() + "' has keepdims=0");
    const auto axes = fusion::reduceAxes(*mean);
    if (!axes || *axes != c.axes) return refuse("the two ReduceMeans reduce different axes");
    if (!fusion::isStaticFloat32(x))
      return refuse("input '" + x->name() + "' is not a static float32 tensor");
    // The centred value feeds exactly the square and the normalizing op.
    const Value* d = c.numerator;
    if (d->isGraphOutput()) return refuse("interior value '" + d->name() + "' is a graph output");
    for (const Use& u : d->uses()) {
      if (u.user != c.square && u.user != c.norm)
        return refuse("interior value '" + d->name() + "' has another user '" + u.user->name() + "'");
    }
    AffineTail t = matchAffineTail(*c.norm, /*allow_beta=*/true);
    c.interior.push_back(mean->output());
    c.interior.insert(c.interior.end(), t.interior.begin(), t.interior.end());
    if (std::string p = firstInteriorProblem(c.interior); !p.empty()) return refuse(p);
    return emitFused(c, t, x, "LayerNormalization", "LayerNorm", rw);
  }

  template <typename Refuse>
  static LogicalResult fuseRmsNorm(NormCore& c, Refuse refuse, Rewriter& rw) {
    Value* x = c.numerator;
    if (!fusion::isStaticFloat32(x))
      return refuse("input '" + x->name() + "' is not a static float32 tensor");
    AffineTail t = matchAffineTail(*c.norm, /*allow_beta=*/false);
    c.interior.insert(c.interior.end(), t.interior.begin(), t.interior.end());
    if (std::string p = firstInteriorProblem(c.interior); !p.empty()) return refuse(p);
    return emitFused(c, t, x, "RMSNorm", "RMSNorm", rw);
  }
};

class FuseLayerNormPass : public PatternPass {
 public:
  const char* name() const override { return "fuse_layernorm"; }
  const char* description() const override {
    return "decomposed LayerNorm / RMSNorm (ReduceMean, Sub, Pow, Sqrt, Div, affine) -> one op";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<FuseNorm>(); }
};

}  // namespace

std::unique_ptr<Pass> createFuseLayerNormPass() {
  return std::make_unique<FuseLayerNormPass>();
}

}  // namespace npuc
