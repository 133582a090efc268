// fold_batchnorm: a per-output-channel affine map y -> scale[c] * y + shift[c] applied to the
// result of a linear op is folded into that op's weights and bias:
//   BatchNormalization (inference)  scale = gamma / sqrt(var + eps), shift = beta - mean * scale
//   Mul by a per-channel constant   scale = c,                       shift = 0
//   Add of a per-channel constant   scale = 1,                       shift = c
// after Conv (weights [Cout, Cin/g, k...]), ConvTranspose (weights [Cin, Cout/g, k...]), Gemm and
// MatMul with constant weights (channel = last output dim). Grouped and depthwise convolutions
// are covered by the layouts above. MatMul has no bias input, so a shift becomes an Add after it
// (and an Add after MatMul is left alone: that is already the canonical MatMul + bias form).
// Folding reassociates float arithmetic, so results may differ in the last bits: level 3 only.
#include <cmath>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

struct ChannelAffine {
  std::vector<double> scale;
  std::vector<double> shift;
};

// The linear op the affine map follows, and where its output channels are.
struct LinearOp {
  Node* node = nullptr;
  int64_t channels = 0;
  int64_t channel_axis = 0;  // axis of the op's output that holds the channels
};

bool isFloat32Constant(const Value* v) {
  return v && v->isConstant() && v->dtype() == DType::Float32;
}

// Describes `n` as a foldable linear op, or explains why it is not one.
std::string describeLinear(Node& n, LinearOp& out) {
  const std::string& op = n.opType();
  Value* w = n.input(1);
  if (!isFloat32Constant(w)) return "weights of '" + n.name() + "' are not a float32 constant";
  if (n.input(2) && !isFloat32Constant(n.input(2)))
    return "bias of '" + n.name() + "' is not a float32 constant";
  const Tensor& wt = w->constant();
  const int64_t out_rank = n.output()->rank();
  out.node = &n;
  if (op == "Conv" && wt.rank() >= 3) {
    out.channels = wt.dim(0);
    out.channel_axis = 1;
  } else if (op == "ConvTranspose" && wt.rank() >= 3) {
    out.channels = wt.dim(1) * n.attrs().i("group", 1);
    out.channel_axis = 1;
  } else if (op == "Gemm" && wt.rank() == 2) {
    out.channels = n.attrs().i("transB", 0) ? wt.dim(0) : wt.dim(1);
    out.channel_axis = 1;
  } else if (op == "MatMul" && wt.rank() == 2 && out_rank >= 2) {
    out.channels = wt.dim(1);
    out.channel_axis = out_rank - 1;
  } else {
    return "'" + n.name() + "' (" + op + ") has a weight layout this pass does not fold";
  }
  return "";
}

// Per-channel values of a constant that broadcasts against an output of rank `rank` only along
// `axis` (every other dim 1). Empty if it does not.
std::vector<double> perChannel(const Tensor& c, int64_t rank, int64_t axis, int64_t channels) {
  if (c.rank() > rank) return {};
  const int64_t offset = rank - c.rank();
  int64_t along = 1;
  for (int64_t d = 0; d < c.rank(); ++d) {
    if (d + offset == axis) {
      along = c.dim(d);
    } else if (c.dim(d) != 1) {
      return {};
    }
  }
  if (along != 1 && along != channels) return {};
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) v[static_cast<size_t>(i)] = c.doubleAt(along == 1 ? 0 : i);
  return v;
}

// Weights with every output channel's slice multiplied by scale[channel].
Tensor scaledWeights(const LinearOp& lin, const std::vector<double>& scale) {
  Tensor w = lin.node->input(1)->constant().clone();
  float* p = w.data<float>();
  const std::string& op = lin.node->opType();
  const int64_t n = w.numel();
  if (op == "Conv") {
    const int64_t inner = n / w.dim(0);
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(p[i] * scale[static_cast<size_t>(i / inner)]);
  } else if (op == "ConvTranspose") {
    // [Cin, Cout/g, k...]: input channel ci belongs to group ci / (Cin/g), whose output channels
    // start at group * (Cout/g).
    const int64_t group = lin.node->attrs().i("group", 1);
    const int64_t cin_per_group = w.dim(0) / group, cout_per_group = w.dim(1);
    const int64_t inner = n / (w.dim(0) * w.dim(1));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ci = i / (cout_per_group * inner), j = (i / inner) % cout_per_group;
      p[i] = static_cast<float>(p[i] * scale[static_cast<size_t>((ci / cin_per_group) * cout_per_group + j)]);
    }
  } else {
    const bool rows_are_channels = op == "Gemm" && lin.node->attrs().i("transB", 0);
    const int64_t cols = w.dim(1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ch = rows_are_channels ? i / cols : i % cols;
      p[i] = static_cast<float>(p[i] * scale[static_cast<size_t>(ch)]);
    }
  }
  return w;
}

// Conv / ConvTranspose bias after the map: b' = b * scale + shift (b = 0 when absent).
Tensor convBias(const LinearOp& lin, const ChannelAffine& a) {
  Tensor b(DType::Float32, {lin.channels});
  const Value* old = lin.node->input(2);
  for (int64_t c = 0; c < lin.channels; ++c) {
    const size_t k = static_cast<size_t>(c);
    const double base = old ? old->constant().doubleAt(c) : 0.0;
    b.data<float>()[c] = static_cast<float>(base * a.scale[k] + a.shift[k]);
  }
  return b;
}

// Gemm's C after the map: C' = beta * C * scale + shift, broadcast to [N] or, when C varies along
// M, to [M, N]; beta becomes 1.
Tensor gemmBias(const LinearOp& lin, const ChannelAffine& a) {
  const Value* c = lin.node->input(2);
  const double beta = lin.node->attrs().f("beta", 1.0f);
  const Shape& out = lin.node->output()->shape();
  const bool varies_along_m = c && c->constant().rank() == 2 && c->constant().dim(0) != 1;
  const int64_t rows = varies_along_m ? out[0] : 1, n = lin.channels;
  Tensor b(DType::Float32, varies_along_m ? Shape{rows, n} : Shape{n});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double base = 0.0;
      if (c) {
        const Tensor& ct = c->constant();
        const int64_t cols = ct.rank() == 0 ? 1 : ct.dim(-1);
        const int64_t crow = ct.rank() == 2 && ct.dim(0) != 1 ? r : 0;
        base = beta * ct.doubleAt(crow * cols + (cols == 1 ? 0 : j));
      }
      const size_t k = static_cast<size_t>(j);
      b.data<float>()[r * n + j] = static_cast<float>(base * a.scale[k] + a.shift[k]);
    }
  }
  return b;
}

bool allZero(const std::vector<double>& v) {
  for (double x : v) {
    if (x != 0.0) return false;
  }
  return true;
}

// Rewrites `lin` in place to absorb the map and replaces `root`'s output with the result.
void applyAffine(const LinearOp& lin, const ChannelAffine& a, Node& root, Rewriter& rw) {
  Node* n = lin.node;
  const std::string hint = n->name() + "_folded";
  n->setInput(1, rw.constant(scaledWeights(lin, a.scale), hint + "_w"));
  Value* result = n->output();
  if (n->opType() == "Conv" || n->opType() == "ConvTranspose") {
    n->setInput(2, rw.constant(convBias(lin, a), hint + "_b"));
  } else if (n->opType() == "Gemm") {
    n->setInput(2, rw.constant(gemmBias(lin, a), hint + "_c"));
    n->attrs().set("beta", 1.0f);
  } else if (!allZero(a.shift)) {  // MatMul: the shift becomes a bias Add
    Tensor t(DType::Float32, {lin.channels});
    for (int64_t c = 0; c < lin.channels; ++c)
      t.data<float>()[c] = static_cast<float>(a.shift[static_cast<size_t>(c)]);
    result =
        rw.createLike(*root.output(), "Add", {result, rw.constant(std::move(t), hint + "_b")}, {}, n->name())
            ->output();
  }
  rw.notifyModified(n);
  rw.replaceOp(&root, {result});
}

class FoldBatchNorm : public RewritePattern {
 public:
  FoldBatchNorm() : RewritePattern("fold_batchnorm_into_linear", {"BatchNormalization"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* producer = nullptr;
    Value *gamma = nullptr, *beta = nullptr, *mean = nullptr, *var = nullptr;
    auto pat = m::op("BatchNormalization", m::trait(OpTrait::WeightLinear).bind(&producer).allowExtraInputs(),
                     m::constant(&gamma), m::constant(&beta), m::constant(&mean), m::constant(&var));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    if (root.attrs().i("training_mode", 0) != 0)
      return rw.notifyMatchFailure(root, "training-mode BatchNormalization");
    for (size_t i = 1; i < root.numOutputs(); ++i) {
      if (root.output(i)->hasUses() || root.output(i)->isGraphOutput()) {
        return rw.notifyMatchFailure(root, "running statistics outputs are used");
      }
    }
    LinearOp lin;
    const std::string why = describeLinear(*producer, lin);
    if (!why.empty()) return rw.notifyMatchFailure(root, why);
    if (lin.channel_axis != 1)
      return rw.notifyMatchFailure(root, "channels of '" + producer->name() + "' are not on axis 1");
    const double eps = root.attrs().f("epsilon", 1e-5f);
    ChannelAffine a;
    const int64_t rank = root.input(0)->rank();
    auto g = perChannel(gamma->constant(), 1, 0, lin.channels),
         b = perChannel(beta->constant(), 1, 0, lin.channels);
    auto mu = perChannel(mean->constant(), 1, 0, lin.channels),
         v = perChannel(var->constant(), 1, 0, lin.channels);
    if (g.empty() || b.empty() || mu.empty() || v.empty() || rank < 2) {
      return rw.notifyMatchFailure(
          root, "BatchNormalization parameters do not have " + std::to_string(lin.channels) + " channels");
    }
    for (size_t c = 0; c < g.size(); ++c) {
      const double s = g[c] / std::sqrt(v[c] + eps);
      a.scale.push_back(s);
      a.shift.push_back(b[c] - mu[c] * s);
    }
    applyAffine(lin, a, root, rw);
    return success();
  }
};

// Mul / Add by a per-channel constant after a linear op.
class FoldChannelMulAdd : public RewritePattern {
 public:
  FoldChannelMulAdd() : RewritePattern("fold_channel_mul_add_into_linear", {"Mul", "Add"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* producer = nullptr;
    Value* c = nullptr;
    auto pat = m::op(root.opType(), m::trait(OpTrait::WeightLinear).bind(&producer).allowExtraInputs(),
                     m::constant(&c));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    const bool is_mul = root.opType() == "Mul";
    if (!is_mul && producer->opType() == "MatMul")
      return failure();  // MatMul + Add is the canonical bias form
    LinearOp lin;
    const std::string why = describeLinear(*producer, lin);
    if (!why.empty()) return rw.notifyMatchFailure(root, why);
    if (!sameType(*producer->output(), *root.output()) || c->dtype() != DType::Float32) {
      return rw.notifyMatchFailure(root, "the constant changes the result shape or type");
    }
    std::vector<double> per =
        perChannel(c->constant(), root.output()->rank(), lin.channel_axis, lin.channels);
    if (per.empty()) {
      return rw.notifyMatchFailure(root, "constant of shape " + shapeStr(c->constant().shape()) +
                                             " is not per-channel for " + std::to_string(lin.channels) +
                                             " channels");
    }
    ChannelAffine a;
    a.scale = is_mul ? per : std::vector<double>(per.size(), 1.0);
    a.shift = is_mul ? std::vector<double>(per.size(), 0.0) : per;
    applyAffine(lin, a, root, rw);
    return success();
  }
};

class FoldBatchNormPass : public PatternPass {
 public:
  const char* name() const override { return "fold_batchnorm"; }
  const char* description() const override {
    return "folds BatchNormalization and per-channel Mul/Add into Conv/ConvTranspose/Gemm/MatMul weights";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override {
    p.add<FoldBatchNorm>();
    p.add<FoldChannelMulAdd>();
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldBatchNormPass() {
  return std::make_unique<FoldBatchNormPass>();
}

}  // namespace npuc
