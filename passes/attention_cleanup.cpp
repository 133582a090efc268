// attention_cleanup: the head split of an attention block as exporters write it, rewritten so the
// split is one Reshape and one Transpose shared by q, k and v instead of one chain per head group.
// PyTorch's MultiheadAttention export (tiny_vit) computes q/k/v with one Gemm and then, per part,
//
//   Slice(qkv, last axis) -> Reshape [tokens, heads, dim] -> (Mul by 1/sqrt(dim): q only) -> Transpose
//
// Three rewrites, each exact in its own right, turn that into
//
//   Reshape(qkv, [tokens, 3 * heads, dim]) -> Transpose -> Slice (q, v)     and the same Reshape -> Slice
//   -> Transpose (k, whose permutation differs)
//
// * merge_sibling_projections: exports that write q, k and v as three Linears of the same input
//   (Gemm, or MatMul by a constant matrix) get one projection with the weights side by side and a
//   last-axis Slice per part: one NPU task instead of three, and the form the rewrites below take.
//   A kernel may block the wider product differently: level 3. Float builds only: in INT8 the
//   merged output would have one scale for parts whose ranges may differ widely.
// * fold_scale_into_projection: a Mul by a scalar whose input is (a view of) some columns of a
//   Gemm with constant weights multiplies those weight columns and bias entries instead, when no
//   other consumer reads those columns. Reassociates the scale: level 3.
// * slice_before_reshape: Reshape(Slice(x)) -> Slice(Reshape(x)) when the Reshape splits the cut
//   axis into [outer, inner...] with the cut on whole `inner` blocks; the q/k/v Reshapes of x are
//   then identical (CSE merges them) and merge with the Reshape that produced x. Only when it lets
//   Reshapes merge (x comes from a Reshape, or every consumer of x is such a Slice -> Reshape).
// * slice_before_transpose: Transpose(Slice(x)) -> Slice(Transpose(x)) when at least two slices of x
//   are transposed the same way (q and v): they then share one Transpose of x (pure data movement,
//   one NPU task instead of two; the elements moved are those of the slices plus the ones between).
//
// The passes after it (merge_reshapes, CSE, canonicalize) do the merging. Head merge (Transpose ->
// Reshape before the output projection) is already minimal and is left alone.
#include <fmt/format.h>

#include <algorithm>

#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/slice_util.h"

namespace npuc {
namespace {

using slicing::AxisRange;
using slicing::singleAxisRange;

Node* producerSlice(const Value* v) {
  return fusion::producerIs(v, "Slice");
}

// ---------------------------------------------------------------- merge_sibling_projections

// Slice(x) taking range `r`, typed like `like`.
Node* createSlice(Rewriter& rw, const Value& like, Value* x, const AxisRange& r, const std::string& name) {
  Value* starts = rw.constant(int64Vector({r.start}), name + "_starts");
  Value* ends = rw.constant(int64Vector({r.start + r.count}), name + "_ends");
  Value* axes = rw.constant(int64Vector({r.axis}), name + "_axes");
  return rw.createLike(like, "Slice", {x, starts, ends, axes}, {}, name);
}

// A projection of `x`: Gemm(x, B, C) without transA, or MatMul(x, B), B a float32 constant matrix.
// The weight is only read here; it is laid out as [K, N] (transB undone) when the merge is built.
struct Projection {
  Node* node = nullptr;
  Tensor weight;  // as stored: [K, N], or [N, K] with transB
  bool trans_b = false;
  std::optional<Tensor> bias;  // [N]
  int64_t k() const { return weight.shape()[trans_b ? 1 : 0]; }
  int64_t n() const { return weight.shape()[trans_b ? 0 : 1]; }
  Tensor weightKN() const;
};

Tensor transposed2d(const Tensor& t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out(DType::Float32, Shape{cols, rows});
  const float* s = t.data<float>();
  float* d = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) d[c * rows + r] = s[r * cols + c];
  return out;
}

Tensor Projection::weightKN() const {
  return trans_b ? transposed2d(weight) : weight;
}

std::optional<Projection> asProjection(Node* n, const Value* x) {
  if (n->input(0) != x || n->numOutputs() != 1) return std::nullopt;
  const Value* b = n->input(1);
  if (!b || !b->isConstant() || b->dtype() != DType::Float32 || b->rank() != 2) return std::nullopt;
  Projection p{n, b->constant(), false, std::nullopt};
  if (n->opType() == "MatMul") return x->rank() >= 2 ? std::optional<Projection>(p) : std::nullopt;
  if (n->opType() != "Gemm" || n->attrs().i("transA", 0) != 0 || n->attrs().f("alpha", 1.0f) != 1.0f ||
      n->attrs().f("beta", 1.0f) != 1.0f)
    return std::nullopt;
  p.trans_b = n->attrs().i("transB", 0) != 0;
  if (const Value* c = n->input(2)) {
    const int64_t cols = p.n();
    if (!c->isConstant() || c->dtype() != DType::Float32 || c->constant().numel() != cols ||
        c->shape().empty() || c->shape().back() != cols)
      return std::nullopt;  // a bias per row or a scalar does not split by column
    p.bias = c->constant();
  }
  return p;
}

// Tensors side by side along the last axis ([K, N1] + [K, N2] -> [K, N1 + N2]; [N] + [M] -> [N + M]).
Tensor sideBySide(const std::vector<const Tensor*>& parts) {
  const int64_t rows = parts[0]->rank() == 2 ? parts[0]->shape()[0] : 1;
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->numel() / rows;
  Tensor out(DType::Float32, parts[0]->rank() == 2 ? Shape{rows, total} : Shape{total});
  float* d = out.data<float>();
  int64_t offset = 0;
  for (const Tensor* t : parts) {
    const int64_t cols = t->numel() / rows;
    for (int64_t r = 0; r < rows; ++r)
      std::copy(t->data<float>() + r * cols, t->data<float>() + (r + 1) * cols, d + r * total + offset);
    offset += cols;
  }
  return out;
}

// Merged projections share one per-tensor INT8 output grid, set by the widest-ranging part: a part
// whose range is r times smaller keeps log2(r) bits fewer. The ranges are not known before
// calibration, and the weights do not predict them: on MediaPipe's hand_landmark_lite, whose four
// heads read one feature vector, the largest column L1 norms (a bound per unit of input) are 220,
// 62, 39 and 6.2, while the outputs measure ~180, ~2, ~5 and ~0.05 (trained features align with
// the landmark weights). Merged, the world landmarks (~0.05) rounded to zero in INT8 (cosine 0.0
// instead of 0.79). So the merge runs only in a build known to compute in float.
bool mergedOutputsShareOneInt8Scale(const PassContext& ctx) {
  return !ctx.target || ctx.target->dtype == NpuDType::Int8 || ctx.target->dtype == NpuDType::Int16;
}

class MergeSiblingProjections : public RewritePattern {
 public:
  MergeSiblingProjections()
      : RewritePattern("merge_sibling_projections", {"Gemm", "MatMul"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = root.input(0);
    if (!x || !fusion::isStaticFloat32(x)) return failure();
    std::vector<Projection> parts;
    for (const Use& u : x->uses()) {
      if (u.index != 0 || u.user->opType() != root.opType()) continue;
      auto p = asProjection(u.user, x);
      if (!p || !u.user->output()->shapeIsStatic()) continue;
      if (!parts.empty() && (p->k() != parts[0].k() || p->bias.has_value() != parts[0].bias.has_value()))
        continue;
      parts.push_back(std::move(*p));
    }
    if (parts.size() < 2) return failure();
    if (mergedOutputsShareOneInt8Scale(rw.context()))
      return rw.notifyMatchFailure(root, "the build is quantized (or of unknown dtype): merged, the sibling "
                                         "projections' outputs would share one scale");
    // Rewrite once, from the first sibling in graph order (the merged op goes before all of them).
    for (const Projection& p : parts)
      if (p.node->order() < root.order()) return failure();
    std::vector<Tensor> laid_out;  // [K, N] each, built only now that the merge happens
    std::vector<const Tensor*> weights, biases;
    for (const Projection& p : parts) laid_out.push_back(p.weightKN());
    for (size_t i = 0; i < parts.size(); ++i) {
      weights.push_back(&laid_out[i]);
      if (parts[i].bias) biases.push_back(&*parts[i].bias);
    }
    rw.setInsertionPointBefore(&root);
    std::vector<Value*> ins{x, rw.constant(sideBySide(weights), root.name() + "_merged_w")};
    if (!biases.empty()) ins.push_back(rw.constant(sideBySide(biases), root.name() + "_merged_b"));
    Node* merged = rw.create(root.opType(), ins, {}, root.name() + "_merged");
    const int64_t axis = merged->output()->rank() - 1;
    // Every Slice first: replacing a sibling erases it, and root is the insertion point.
    std::vector<Value*> cuts;
    int64_t offset = 0;
    for (const Projection& p : parts) {
      const int64_t cols = p.n();
      cuts.push_back(
          createSlice(rw, *p.node->output(), merged->output(), AxisRange{axis, offset, cols}, p.node->name())
              ->output());
      offset += cols;
    }
    for (size_t i = 0; i < parts.size(); ++i) rw.replaceOp(parts[i].node, {cuts[i]});
    return success();
  }
};

// ---------------------------------------------------------------- fold_scale_into_projection

// The Gemm whose output columns [range) a value reads, walking up single-use views and Transposes
// and at most one last-axis Slice; `range` covers all N columns when there is no Slice.
struct ColumnSource {
  Node* gemm = nullptr;
  int64_t start = 0;
  int64_t count = 0;
  Value* sliced_view = nullptr;  // the value the Slice cuts (null without a Slice)
  const Node* slice = nullptr;
};

// The Gemm under `x` through views that keep every row of N elements intact (the last dim stays
// N, so their rows are Gemm rows), N. Values below x must have no other reader: it would read all
// columns, the scaled ones too.
Node* gemmBelowRowViews(Value* x, int64_t& n) {
  Value* v = x;
  while (fusion::isView(v->producer())) {
    Value* in = v->producer()->input(0);
    if (!in->shapeIsStatic() || in->shape().empty() || in->shape().back() != x->shape().back())
      return nullptr;
    if (!m::interiorUseProblem(*in).empty()) return nullptr;
    v = in;
  }
  Node* gemm = fusion::producerIs(v, "Gemm");
  if (!gemm || !v->shapeIsStatic() || v->rank() != 2) return nullptr;
  n = v->shape()[1];
  return gemm;
}

std::optional<ColumnSource> columnSource(Value* v) {
  // Single-use views and Transposes down to a Slice or the Gemm: they only rearrange the elements
  // the Mul scales.
  auto rearranges = [](const Node* n) { return fusion::isView(n) || (n && n->opType() == "Transpose"); };
  while (rearranges(v->producer()) && m::interiorUseProblem(*v).empty()) v = v->producer()->input(0);
  ColumnSource src;
  int64_t n = 0;
  if (Node* slice = producerSlice(v); slice && m::interiorUseProblem(*v).empty()) {
    const auto r = singleAxisRange(*slice);
    Value* x = slice->input(0);
    if (!r || r->axis != x->rank() - 1) return std::nullopt;
    src.gemm = gemmBelowRowViews(x, n);
    src.start = r->start;
    src.count = r->count;
    src.sliced_view = x;
    src.slice = slice;
  } else {
    if (!m::interiorUseProblem(*v).empty()) return std::nullopt;
    src.gemm = fusion::producerIs(v, "Gemm");
    if (!src.gemm || src.gemm->output() != v || v->rank() != 2) return std::nullopt;
    n = v->shape()[1];
    src.count = n;
  }
  if (!src.gemm || src.start + src.count > n) return std::nullopt;
  return src;
}

// Why the other readers of `src.sliced_view` may see the scaled columns ("" if none can).
std::string otherReadersProblem(const ColumnSource& src) {
  if (!src.slice) return "";
  for (const Use& u : src.sliced_view->uses()) {
    if (u.user == src.slice) continue;
    const auto r = u.user->opType() == "Slice" ? singleAxisRange(*u.user) : std::nullopt;
    if (!r || r->axis != src.sliced_view->rank() - 1)
      return fmt::format("'{}' ({}) reads all of the projection", u.user->name(), u.user->opType());
    if (r->start < src.start + src.count && src.start < r->start + r->count)
      return fmt::format("Slice '{}' reads some of the same columns", u.user->name());
  }
  return src.sliced_view->isGraphOutput() ? "the projection is a graph output" : "";
}

// `t` (float32, last dim n) with elements of columns [start, start + count) multiplied by `s`.
Tensor scaledColumns(const Tensor& t, int64_t n, int64_t start, int64_t count, float s,
                     bool rows_are_columns) {
  Tensor out = t.clone();
  float* d = out.data<float>();
  if (rows_are_columns) {  // transB: B is [N, K], column j of the product is row j of B
    const int64_t k = t.numel() / n;
    for (int64_t j = start; j < start + count; ++j)
      for (int64_t i = 0; i < k; ++i) d[j * k + i] *= s;
    return out;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t j = i % n;
    if (j >= start && j < start + count) d[i] *= s;
  }
  return out;
}

class FoldScaleIntoProjection : public RewritePattern {
 public:
  FoldScaleIntoProjection()
      : RewritePattern("fold_scale_into_projection", {"Mul"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* v = nullptr;
    Value* c = nullptr;
    if (m::matchRoot(root, m::op("Mul", m::any(&v), m::constant(&c)), rw).failed()) return failure();
    const auto s = fusion::floatScalar(c);
    if (!s || !fusion::isStaticFloat32(v) || !sameType(*v, *root.output())) return failure();
    const auto src = columnSource(v);
    if (!src) return failure();
    Node& gemm = *src->gemm;
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(
          root, fmt::format("scale '{}' not folded into Gemm '{}': {}", root.name(), gemm.name(), why));
    };
    const Value* b = gemm.input(1);
    const Value* bias = gemm.input(2);
    const int64_t n = gemm.output()->shape()[1];
    if (gemm.attrs().i("transA", 0) != 0) return refuse("transA is set");
    if (!b->isConstant() || b->dtype() != DType::Float32 || b->rank() != 2)
      return refuse("weights are not constant");
    if (bias && (!bias->isConstant() || bias->dtype() != DType::Float32 || bias->shape().empty() ||
                 bias->shape().back() != n))
      return refuse("its bias is not a constant with one value per column");
    if (std::string p = otherReadersProblem(*src); !p.empty()) return refuse(p);
    if (!rw.canReplace(*root.output(), *v)) return refuse("the Mul's output is a graph output");

    const bool trans_b = gemm.attrs().i("transB", 0) != 0;
    std::vector<Value*> ins = gemm.inputs();
    ins[1] =
        rw.constant(scaledColumns(b->constant(), n, src->start, src->count, static_cast<float>(*s), trans_b),
                    b->name() + "_scaled");
    if (bias) {
      ins[2] = rw.constant(
          scaledColumns(bias->constant(), n, src->start, src->count, static_cast<float>(*s), false),
          bias->name() + "_scaled");
    }
    rw.setInsertionPointBefore(&gemm);
    Node* scaled = rw.createLike(*gemm.output(), "Gemm", ins, gemm.attrs(), gemm.name());
    rw.replaceOp(&gemm, {scaled->output()});
    rw.replaceOp(&root, {v});
    return success();
  }
};

// ---------------------------------------------------------------- slice_before_reshape

// The Reshape of `x` (shape `in`, cut on `range`) that reshapes the cut version to `out`, and the
// axis/range of the cut in that Reshape's output: nullopt unless `out` keeps the dims before and
// after the cut axis as separate groups and splits the cut axis as [outer, inner...] with the cut
// on whole inner blocks.
struct SplitView {
  Shape full;  // the Reshape of the uncut x
  AxisRange cut;
};

std::optional<SplitView> splitView(const Shape& in, const AxisRange& range, const Shape& out) {
  const auto a = static_cast<size_t>(range.axis);
  int64_t pre = 1, mid = range.count, post = 1;
  for (size_t i = 0; i < a; ++i) pre *= in[i];
  for (size_t i = a + 1; i < in.size(); ++i) post *= in[i];
  // Output dims [0, b0) hold `pre`, [b0, b1) hold the cut axis, the rest `post`.
  size_t b0 = 0;
  int64_t p = 1;
  while (b0 < out.size() && p < pre) p *= out[b0++];
  while (b0 < out.size() && out[b0] == 1 && mid != 1) ++b0;  // size-1 dims belong to either side
  if (p != pre || b0 >= out.size()) return std::nullopt;
  size_t b1 = b0;
  int64_t q = 1;
  while (b1 < out.size() && q < mid) q *= out[b1++];
  if (q != mid || b1 == b0) return std::nullopt;
  int64_t rest = 1;
  for (size_t i = b1; i < out.size(); ++i) rest *= out[i];
  if (rest != post) return std::nullopt;
  const int64_t inner = mid / out[b0];
  const int64_t full_dim = in[a];
  if (range.start % inner != 0 || full_dim % inner != 0) return std::nullopt;
  SplitView v;
  v.full = out;
  v.full[b0] = full_dim / inner;
  v.cut = AxisRange{static_cast<int64_t>(b0), range.start / inner, out[b0]};
  return v;
}

// `x` is split for views: it has several readers, each a view or a single-use Slice whose one reader
// is a Reshape (siblings already rewritten read x through a view).
bool splitFeedsViews(const Value& x) {
  if (x.isGraphOutput() || x.uses().size() < 2) return false;
  for (const Use& u : x.uses()) {
    if (fusion::isView(u.user)) continue;
    if (u.user->opType() != "Slice") return false;
    const Node* next = fusion::soleConsumer(u.user->output());
    if (!next || next->opType() != "Reshape") return false;
  }
  return true;
}

class SliceBeforeReshape : public RewritePattern {
 public:
  SliceBeforeReshape() : RewritePattern("slice_before_reshape", {"Reshape"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    Node* slice = nullptr;
    auto pat = m::op("Reshape", m::op("Slice", m::any(&x)).allowExtraInputs().bind(&slice), m::any());
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    const auto range = singleAxisRange(*slice);
    if (!range || !root.output()->shapeIsStatic()) return failure();
    if (!fusion::isView(x->producer()) && !splitFeedsViews(*x)) return failure();
    const auto view = splitView(x->shape(), *range, root.output()->shape());
    if (!view)
      return rw.notifyMatchFailure(
          root,
          fmt::format("Reshape '{}' to {} does not split the cut axis {} of {} "
                      "on whole blocks",
                      root.name(), shapeStr(root.output()->shape()), range->axis, shapeStr(x->shape())));
    rw.setInsertionPointBefore(&root);
    Value* full = rw.create("Reshape", {x, rw.constant(int64Vector(view->full), root.name() + "_shape")}, {},
                            root.name())
                      ->output();
    Node* cut = createSlice(rw, *root.output(), full, view->cut, slice->name());
    rw.replaceOp(&root, {cut->output()});
    return success();
  }
};

// ---------------------------------------------------------------- slice_before_transpose

class SliceBeforeTranspose : public RewritePattern {
 public:
  SliceBeforeTranspose() : RewritePattern("slice_before_transpose", {"Transpose"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    Node* slice = nullptr;
    auto pat = m::op("Transpose", m::op("Slice", m::any(&x)).allowExtraInputs().bind(&slice));
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    const auto range = singleAxisRange(*slice);
    if (!range || x->isGraphOutput()) return failure();
    const std::vector<int64_t> perm = transposePerm(root, x->rank());
    // Readers of x: Slices, and at most one Transpose of x by `perm` (made for a sibling already).
    Node* shared = nullptr;
    size_t same_perm = 0;
    for (const Use& u : x->uses()) {
      if (u.user->opType() == "Transpose" && transposePerm(*u.user, x->rank()) == perm && !shared) {
        shared = u.user;
        ++same_perm;
        continue;
      }
      if (u.user->opType() != "Slice") return failure();
      const Node* next = fusion::soleConsumer(u.user->output());
      same_perm += next && next->opType() == "Transpose" && transposePerm(*next, x->rank()) == perm;
    }
    if (same_perm < 2)
      return rw.notifyMatchFailure(root,
                                   fmt::format("Transpose '{}' is the only one of its permutation after a "
                                               "Slice of '{}': moving it above would move more data",
                                               root.name(), x->name()));
    rw.setInsertionPointBefore(&root);
    if (!shared) {
      Attributes a;
      a.set("perm", perm);
      shared = rw.create("Transpose", {x}, a, root.name() + "_shared");
    }
    // The cut axis sits where perm puts it.
    const auto pos = std::find(perm.begin(), perm.end(), range->axis) - perm.begin();
    Node* cut = createSlice(rw, *root.output(), shared->output(),
                            AxisRange{static_cast<int64_t>(pos), range->start, range->count}, slice->name());
    rw.replaceOp(&root, {cut->output()});
    return success();
  }
};

// Two phases: sibling projections are merged and the scale is folded first, while q is still a last-axis
// Slice of the projection (the split rewrites would turn it into a Slice of a shared Transpose, whose columns
// are no longer one range); then the split.
class AttentionCleanupPass : public Pass {
 public:
  const char* name() const override { return "attention_cleanup"; }
  const char* description() const override {
    return "attention head split: scale folded into the q projection, one Reshape and shared Transposes for "
           "q/k/v";
  }

  size_t run(Graph& graph, PassContext& ctx) override {
    if (!scale_) {
      scale_ = std::make_unique<PatternSet>();
      scale_->add<MergeSiblingProjections>();
      scale_->add<FoldScaleIntoProjection>();
      split_ = std::make_unique<PatternSet>();
      split_->add<SliceBeforeReshape>();
      split_->add<SliceBeforeTranspose>();
    }
    return applyPatternsGreedily(graph, *scale_, ctx) + applyPatternsGreedily(graph, *split_, ctx);
  }

 private:
  std::unique_ptr<PatternSet> scale_, split_;
};

}  // namespace

std::unique_ptr<Pass> createAttentionCleanupPass() {
  return std::make_unique<AttentionCleanupPass>();
}

}  // namespace npuc
