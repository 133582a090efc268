// channel_shuffle_to_conv: the ShuffleNet channel shuffle
//
//   y = Reshape(Transpose(Reshape(x, [N, g, C/g, H, W]), perm = [0, 2, 1, 3, 4]), [N, C, H, W])
//
// is the channel permutation y[:, j] = x[:, src(j)] with src(k * g + i) = i * (C/g) + k. It leaves
// the graph; every consumer of y takes the cheapest exact form of "y" it can:
//
//   * a Conv with group 1 and constant weights reads x, its weight's input channels permuted
//     (W'[:, src(j)] = W[:, j]): no new op;
//   * a depthwise Conv whose consumers are all such Convs reads x with its filters permuted the same
//     way; its output is then permuted like y, and its consumers absorb that: no new op;
//   * a channel Slice of y is a channel GATHER of x, indices G = src(selected channels):
//       - G in order is an arithmetic progression (e.g. y[:, 0::g] = x[:, 0:C/g]): a Slice of x
//         with that start and step, no arithmetic at all;
//       - else, if every consumer of the Slice is such a Conv: those Convs read a Slice of x that
//         covers G (the smallest arithmetic progression holding G; x itself when that is all of
//         x), the channels of G placed in their weights and zero weights for the covered channels
//         G does not hold;
//       - else a 1x1 Conv (no bias) whose weight holds one 1 per output row, at column G[t];
//   * any other consumer reads one C -> C 1x1 Conv whose weight is the permutation matrix.
// For ShuffleNetV2 (g = 2, y split in halves) the halves are NOT strided sets of x: the first half
// interleaves x[:, 0:C/4] and x[:, C/2:3C/4]. So the half feeding a 1x1 Conv becomes a Slice of x
// covering 3C/4 channels (C/4 zero weight columns), and the half feeding the next block's Concat a
// 1x1 gather Conv. In the downsampling blocks both branches (depthwise Conv -> 1x1 Conv, and a 1x1
// Conv) absorb the shuffle, and the last shuffle folds into conv5.
//
// In the pipeline, fold_channel_permutations runs first: it rebuilds a whole region of shuffles,
// Slices and Concats between reorderable Convs (ShuffleNetV2's identity path included) without
// gather Convs or zero columns. This pass keeps what it refuses (a shuffled value that is a graph
// output, a producer that cannot reorder its channels, a consumer that cannot absorb an order),
// and runs alone at levels 1-2 for its bit-exact strided-Slice case.
//
// Numerics: a folded Conv sums its input channels in a different order, and a permutation Conv
// multiplies the other channels by 0 (an inf or NaN in one of them would poison the result), so
// the rewrite may change the last bits: level 3. When every consumer becomes a strided Slice the
// rewrite is pure data movement and runs at every level.
#include <algorithm>
#include <numeric>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/slice_util.h"

namespace npuc {
namespace {

// The permutation of one shuffle: shuffled channel j reads source channel src[j].
struct Shuffle {
  Value* source = nullptr;
  std::vector<int64_t> src;
};

// src(j) of a shuffle of `channels` channels in `groups` groups.
std::vector<int64_t> shufflePermutation(int64_t channels, int64_t groups) {
  const int64_t per_group = channels / groups;
  std::vector<int64_t> src(static_cast<size_t>(channels));
  for (int64_t j = 0; j < channels; ++j) src[static_cast<size_t>(j)] = (j % groups) * per_group + j / groups;
  return src;
}

// Why the Reshape -> Transpose -> Reshape at `root` is not a channel shuffle of a static float32
// NCHW tensor (empty if it is one; then `out` holds it).
std::string describeShuffle(const Node& root, const Node& split, const Node& transpose, Shuffle& out) {
  const Value* x = split.input(0);
  const Value* y = root.output();
  if (!fusion::isStaticFloat32(x) || !fusion::isStaticFloat32(y) || x->rank() != 4)
    return "'" + x->name() + "' is not a static float32 NCHW tensor";
  const Shape& xs = x->shape();
  const Shape& s5 = split.output()->shape();
  if (y->shape() != xs) return "the result shape differs from the input shape";
  if (s5.size() != 5 || s5[0] != xs[0] || s5[1] * s5[2] != xs[1] || s5[3] != xs[2] || s5[4] != xs[3])
    return "the first Reshape does not split the channels into [groups, channels/groups]";
  if (transposePerm(transpose, 5) != std::vector<int64_t>{0, 2, 1, 3, 4})
    return "the Transpose does not swap the group axes (perm [0, 2, 1, 3, 4])";
  out.source = split.input(0);
  out.src = shufflePermutation(xs[1], s5[1]);
  return "";
}

// A Conv whose input-channel weights can absorb a permutation of its input.
bool isFoldableConv(const Node& n, const Value* input) {
  return n.opType() == "Conv" && n.domain().empty() && n.input(0) == input && n.attrs().i("group", 1) == 1 &&
         n.input(1) && n.input(1)->isConstant() && n.input(1)->dtype() == DType::Float32 &&
         n.input(1)->rank() >= 3 && !(n.input(1)->isGraphInput());
}

// A depthwise Conv (one filter per channel) of `input` with constant float32 weights and bias.
bool isDepthwiseConv(const Node& n, const Value* input) {
  const int64_t channels = input->shape()[1];
  const Value* w = n.input(1);
  const Value* bias = n.input(2);
  return n.opType() == "Conv" && n.domain().empty() && n.input(0) == input &&
         n.attrs().i("group", 1) == channels && w && w->isConstant() && w->dtype() == DType::Float32 &&
         w->rank() >= 3 && w->shape()[0] == channels && w->shape()[1] == 1 &&
         (!bias || (bias->isConstant() && bias->dtype() == DType::Float32));
}

bool allConsumersAreFoldableConvs(const Value& v) {
  if (v.isGraphOutput() || !v.hasUses()) return false;
  for (const Use& u : v.uses()) {
    if (!isFoldableConv(*u.user, &v) || u.index != 0) return false;
  }
  return true;
}

// The channel indices a Slice that cuts only axis 1 selects, or nullopt.
std::optional<std::vector<int64_t>> channelSelection(const Node& slice) {
  const auto maps = slicing::constantSliceMaps(slice);
  if (!maps || maps->size() != 4) return std::nullopt;
  const Shape& xs = slice.input(0)->shape();
  for (size_t a = 0; a < 4; ++a) {
    const slicing::AxisMap& m = (*maps)[a];
    if (a != 1 && (m.start != 0 || m.step != 1 || m.count != xs[a])) return std::nullopt;
  }
  return slicing::selectedIndices((*maps)[1]);
}

// The smallest arithmetic progression (start, positive step, count) holding every index of `g`.
slicing::AxisMap coveringProgression(const std::vector<int64_t>& g) {
  const auto [lo, hi] = std::minmax_element(g.begin(), g.end());
  int64_t step = 0;
  for (int64_t v : g) step = std::gcd(step, v - *lo);
  step = std::max<int64_t>(step, 1);
  return slicing::AxisMap{*lo, step, (*hi - *lo) / step + 1};
}

// True if `g` in its own order is an arithmetic progression with a positive step.
bool isIncreasingProgression(const std::vector<int64_t>& g) {
  if (g.size() < 2) return true;
  const int64_t step = g[1] - g[0];
  if (step <= 0) return false;
  for (size_t i = 1; i < g.size(); ++i) {
    if (g[i] - g[i - 1] != step) return false;
  }
  return true;
}

// What becomes of one consumer of the shuffled tensor.
enum class Plan {
  kFoldConv,
  kDepthwiseThenFold,
  kStridedSlice,
  kCoverAndFold,
  kGatherConv,
  kPermutationConv
};

struct ConsumerPlan {
  Plan plan;
  Node* user;
  size_t index;
  std::vector<int64_t> gather;  // for Slice consumers: source channels in output order
};

ConsumerPlan planFor(const Use& use, const Value& y, const Shuffle& s) {
  Node* user = use.user;
  if (use.index == 0 && isFoldableConv(*user, &y)) return {Plan::kFoldConv, user, 0, s.src};
  if (use.index == 0 && isDepthwiseConv(*user, &y) && allConsumersAreFoldableConvs(*user->output()))
    return {Plan::kDepthwiseThenFold, user, 0, s.src};
  if (use.index == 0 && user->opType() == "Slice" && user->domain().empty()) {
    if (const auto sel = channelSelection(*user); sel && !sel->empty()) {
      std::vector<int64_t> g;
      for (int64_t j : *sel) g.push_back(s.src[static_cast<size_t>(j)]);
      if (isIncreasingProgression(g)) return {Plan::kStridedSlice, user, 0, g};
      if (allConsumersAreFoldableConvs(*user->output())) return {Plan::kCoverAndFold, user, 0, g};
      return {Plan::kGatherConv, user, 0, g};
    }
  }
  return {Plan::kPermutationConv, user, use.index, {}};
}

// Conv weights reading channel `column[j]` of a new input with `in_channels` channels where the
// old weight read channel j (zeros for new channels no old one maps to).
Tensor remapInputChannels(const Tensor& w, const std::vector<int64_t>& column, int64_t in_channels) {
  const int64_t out_ch = w.dim(0), old_in = w.dim(1), taps = w.numel() / (out_ch * old_in);
  Shape shape = w.shape();
  shape[1] = in_channels;
  Tensor r(DType::Float32, shape);
  float* dst = r.data<float>();
  std::fill(dst, dst + r.numel(), 0.0f);
  const float* src = w.data<float>();
  for (int64_t o = 0; o < out_ch; ++o) {
    for (int64_t j = 0; j < old_in; ++j) {
      std::copy_n(src + (o * old_in + j) * taps, taps,
                  dst + (o * in_channels + column[static_cast<size_t>(j)]) * taps);
    }
  }
  return r;
}

// `t` with its slice t[j] (along axis 0) moved to t[dest[j]].
Tensor moveRows(const Tensor& t, const std::vector<int64_t>& dest) {
  Tensor r(DType::Float32, t.shape());
  const int64_t row = t.numel() / t.dim(0);
  for (int64_t j = 0; j < t.dim(0); ++j)
    std::copy_n(t.data<float>() + j * row, row, r.data<float>() + dest[static_cast<size_t>(j)] * row);
  return r;
}

// 1x1 Conv weights [rows, in_channels, 1, 1] with a 1 at (t, gather[t]).
Tensor selectionWeights(const std::vector<int64_t>& gather, int64_t in_channels) {
  const int64_t rows = static_cast<int64_t>(gather.size());
  Tensor w(DType::Float32, {rows, in_channels, 1, 1});
  float* p = w.data<float>();
  std::fill(p, p + w.numel(), 0.0f);
  for (int64_t t = 0; t < rows; ++t) p[t * in_channels + gather[static_cast<size_t>(t)]] = 1.0f;
  return w;
}

class ChannelShuffleRewriter {
 public:
  ChannelShuffleRewriter(Node& root, const Shuffle& s, Rewriter& rw) : root_(root), s_(s), rw_(rw) {}

  // Rewires every consumer, then erases the Slices that became dead and the shuffle itself (the
  // last erase takes the shuffle's Reshape/Transpose/Reshape with it, so root_ is not touched
  // after that).
  void apply(const std::vector<ConsumerPlan>& plans) {
    std::vector<Node*> dead_slices;
    for (const ConsumerPlan& p : plans) {
      switch (p.plan) {
        case Plan::kFoldConv: foldIntoConv(*p.user, s_.source, p.gather); break;
        case Plan::kDepthwiseThenFold: permuteDepthwise(*p.user, p.gather); break;
        case Plan::kStridedSlice:
          rw_.setInsertionPointBefore(p.user);
          rw_.replaceValue(p.user->output(), channelSlice(coveringProgression(p.gather), p.user->name()));
          dead_slices.push_back(p.user);
          break;
        case Plan::kCoverAndFold:
          coverAndFold(*p.user, p.gather);
          dead_slices.push_back(p.user);
          break;
        case Plan::kGatherConv:
          rw_.setInsertionPointBefore(p.user);
          rw_.replaceValue(p.user->output(), selectionConv(p.gather, *p.user->output(), p.user->name()));
          dead_slices.push_back(p.user);
          break;
        case Plan::kPermutationConv:
          p.user->setInput(p.index, permutationConv());
          rw_.notifyModified(p.user);
          break;
      }
    }
    if (root_.output()->isGraphOutput()) rw_.replaceValue(root_.output(), permutationConv());
    if (dead_slices.empty()) {
      rw_.eraseNode(&root_);
    } else {
      for (Node* slice : dead_slices) rw_.eraseNode(slice);
    }
  }

 private:
  // `conv` reads `input` instead, its weight column j moved to column[j].
  void foldIntoConv(Node& conv, Value* input, const std::vector<int64_t>& column) {
    const Tensor& w = conv.input(1)->constant();
    conv.setInput(1, rw_.constant(remapInputChannels(w, column, input->shape()[1]), conv.name() + "_w"));
    conv.setInput(0, input);
    rw_.notifyModified(&conv);
  }

  // The depthwise Conv filters x's channel src[j] with the filter it had for y's channel j, so its
  // output is permuted like y; its consumers absorb that permutation.
  void permuteDepthwise(Node& dw, const std::vector<int64_t>& src) {
    dw.setInput(1, rw_.constant(moveRows(dw.input(1)->constant(), src), dw.name() + "_w"));
    if (dw.input(2)) dw.setInput(2, rw_.constant(moveRows(dw.input(2)->constant(), src), dw.name() + "_b"));
    dw.setInput(0, s_.source);
    rw_.notifyModified(&dw);
    const std::vector<Use> uses = dw.output()->uses();
    for (const Use& u : uses) foldIntoConv(*u.user, dw.output(), src);
  }

  void coverAndFold(Node& slice, const std::vector<int64_t>& gather) {
    const slicing::AxisMap cover = coveringProgression(gather);
    Value* input = s_.source;
    if (cover.count != s_.source->shape()[1]) {
      rw_.setInsertionPointBefore(&slice);
      input = channelSlice(cover, slice.name());
    }
    std::vector<int64_t> column;
    for (int64_t c : gather) column.push_back((c - cover.start) / cover.step);
    const std::vector<Use> uses = slice.output()->uses();
    for (const Use& u : uses) foldIntoConv(*u.user, input, column);
  }

  Value* channelSlice(const slicing::AxisMap& m, const std::string& hint) {
    Value* starts = rw_.constant(int64Vector({m.start}), hint + "_starts");
    Value* ends = rw_.constant(int64Vector({m.start + m.step * (m.count - 1) + 1}), hint + "_ends");
    Value* axes = rw_.constant(int64Vector({1}), hint + "_axes");
    Value* steps = rw_.constant(int64Vector({m.step}), hint + "_steps");
    return rw_.create("Slice", {s_.source, starts, ends, axes, steps}, {}, hint)->output();
  }

  Value* selectionConv(const std::vector<int64_t>& gather, const Value& like, const std::string& hint) {
    Value* w = rw_.constant(selectionWeights(gather, s_.source->shape()[1]), hint + "_gather_w");
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{1, 1});
    return rw_.createLike(like, "Conv", {s_.source, w}, a, hint + "_gather")->output();
  }

  Value* permutationConv() {
    if (!permuted_) {
      rw_.setInsertionPointBefore(&root_);
      permuted_ = selectionConv(s_.src, *root_.output(), root_.name() + "_shuffle");
    }
    return permuted_;
  }

  Node& root_;
  const Shuffle& s_;
  Rewriter& rw_;
  Value* permuted_ = nullptr;
};

// The general rewrite: every consumer takes its cheapest form (file header). Level 3.
class ChannelShuffleToConv : public RewritePattern {
 public:
  ChannelShuffleToConv()
      : RewritePattern("channel_shuffle_to_conv", {"Reshape"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node *split = nullptr, *transpose = nullptr;
    auto pat = m::op("Reshape",
                     m::op("Transpose", m::op("Reshape", m::any(), m::any()).bind(&split)).bind(&transpose),
                     m::any());
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    Shuffle s;
    if (std::string why = describeShuffle(root, *split, *transpose, s); !why.empty())
      return rw.notifyMatchFailure(
          root, "Reshape-Transpose-Reshape at '" + root.name() + "' is not a channel shuffle: " + why);
    Value* y = root.output();
    std::vector<ConsumerPlan> plans;
    for (const Use& u : y->uses()) plans.push_back(planFor(u, *y, s));
    ChannelShuffleRewriter(root, s, rw).apply(plans);
    return success();
  }
};

// The bit-exact special case, so it runs at every level: each consumer is a channel Slice that
// becomes a strided Slice of the unshuffled tensor. Quiet: the general pattern reports refusals.
class ChannelShuffleToStridedSlices : public RewritePattern {
 public:
  ChannelShuffleToStridedSlices() : RewritePattern("channel_shuffle_to_strided_slices", {"Reshape"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* transpose = fusion::producerIs(root.input(0), "Transpose");
    Node* split = transpose ? fusion::producerIs(transpose->input(0), "Reshape") : nullptr;
    Value* y = root.output();
    if (!split || !m::interiorUseProblem(*transpose->output()).empty() ||
        !m::interiorUseProblem(*split->output()).empty() || y->isGraphOutput() || !y->hasUses())
      return failure();
    Shuffle s;
    if (!describeShuffle(root, *split, *transpose, s).empty()) return failure();
    std::vector<ConsumerPlan> plans;
    for (const Use& u : y->uses()) {
      plans.push_back(planFor(u, *y, s));
      if (plans.back().plan != Plan::kStridedSlice) return failure();
    }
    ChannelShuffleRewriter(root, s, rw).apply(plans);
    return success();
  }
};

class ChannelShuffleToConvPass : public PatternPass {
 public:
  const char* name() const override { return "channel_shuffle_to_conv"; }
  const char* description() const override {
    return "Reshape-Transpose-Reshape channel shuffle -> folded into Conv weights, strided Slices or a 1x1 "
           "Conv";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<ChannelShuffleToStridedSlices>();
    p.add<ChannelShuffleToConv>();
  }
};

}  // namespace

std::unique_ptr<Pass> createChannelShuffleToConvPass() {
  return std::make_unique<ChannelShuffleToConvPass>();
}

}  // namespace npuc
