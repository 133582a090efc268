// fold_focus: the YOLOv5 "Focus" space-to-depth written as four strided Slices and a Concat,
//
//   t = Concat_axis1(x[:, :, dy0::2, dx0::2], ..., x[:, :, dy3::2, dx3::2])
//
// with the four offsets (dy, dx) some order of (0,0), (1,0), (0,1), (1,1) (each Slice may be one
// Slice over H and W or a chain of single-axis Slices), x static float32 NCHW with even H and W.
// Block b of t (channels [b*C, (b+1)*C)) holds t[n, b*C + c, i, j] = x[n, c, 2i + dy_b, 2j + dx_b].
//
// 1. Followed by a Conv (group 1, constant weights W [O, 4C, kh, kw], strides s, pads p,
//    dilations d): the Conv reads t at row r = s*i - p_top + d*u for kernel row u, i.e. x at row
//    2r + dy_b = (2s)*i - 2*p_top + (2*d*u + dy_b). That is a Conv on x with stride 2s, pads 2p,
//    dilation 1 and kernel rows U = 2*d*u + dy_b (likewise for columns), so
//        W'[o, c, 2*d*u + dy_b, 2*d*v + dx_b] = W[o, b*C + c, u, v],   kernel 2*d*(k-1) + 2,
//    and every other tap of W' is zero (none for d = 1: the kernel is exactly 2k). A t row outside
//    [0, H/2) is an x row outside [0, H) and vice versa, so t's zero padding is x's; the output
//    size floor((H + 2p_top + 2p_bottom - 2d(k-1) - 2) / 2s) + 1 equals the original. The bias
//    is kept. The sum runs over the taps in another order (and a zero tap multiplies x): level 3.
// 2. Otherwise (no such Conv, a grouped Conv, or below level 3): SpaceToDepth(x, blocksize 2),
//    whose channel (by*2 + bx)*C + c holds x[2i + by, 2j + bx] (ONNX order: (0,0), (0,1), (1,0),
//    (1,1)), followed, when the Concat order differs (YOLOv5's does: (0,0), (1,0), (0,1), (1,1)),
//    by a Gather on axis 1 that puts the blocks in the Concat's order. Pure data movement: exact.
#include <array>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/slice_util.h"

namespace npuc {
namespace {

constexpr int64_t kBlock = 2;       // Focus halves H and W
constexpr size_t kFocusInputs = 4;  // one Concat input per (dy, dx) offset in the 2x2 block

struct Offset {
  int64_t dy = 0, dx = 0;
};

// A Focus: the sliced tensor and the offset of each Concat input, in Concat order.
struct Focus {
  Value* source = nullptr;
  std::array<Offset, kFocusInputs> offsets;
};

// Walks `v` back through Slices to the tensor they cut and the composed per-axis map from `v`'s
// indices to that tensor's (nullopt if a Slice has non-constant parameters).
std::optional<std::pair<Value*, std::vector<slicing::AxisMap>>> sliceChainSource(Value* v) {
  if (!fusion::producerIs(v, "Slice") || !v->shapeIsStatic()) return std::nullopt;
  std::vector<slicing::AxisMap> composed;
  for (int64_t d : v->shape()) composed.push_back({0, 1, d});
  while (Node* slice = fusion::producerIs(v, "Slice")) {
    const auto maps = slicing::constantSliceMaps(*slice);
    if (!maps || maps->size() != composed.size()) return std::nullopt;
    for (size_t a = 0; a < composed.size(); ++a) {
      composed[a].start = (*maps)[a].start + (*maps)[a].step * composed[a].start;
      composed[a].step *= (*maps)[a].step;
    }
    v = slice->input(0);
  }
  return std::make_pair(v, composed);
}

// The (dy, dx) offset if `maps` take every other row and column of `x` from that offset and
// everything of N and C.
std::optional<Offset> focusOffset(const Value& x, const std::vector<slicing::AxisMap>& maps) {
  const Shape& s = x.shape();
  for (size_t a = 0; a < 2; ++a) {
    if (maps[a].start != 0 || maps[a].step != 1 || maps[a].count != s[a]) return std::nullopt;
  }
  for (size_t a = 2; a < 4; ++a) {
    if (maps[a].step != kBlock || maps[a].start < 0 || maps[a].start >= kBlock ||
        maps[a].count != s[a] / kBlock)
      return std::nullopt;
  }
  return Offset{maps[2].start, maps[3].start};
}

// Why `concat` is not a Focus (empty if it is; then `out` holds it).
std::string describeFocus(const Node& concat, Focus& out) {
  if (concat.numInputs() != kFocusInputs || concat.output()->rank() != 4)
    return "not a Concat of four NCHW tensors";
  if (concat.attrs().i("axis", 0) != 1 && concat.attrs().i("axis", 0) != -3) return "Concat axis is not 1";
  bool seen[kBlock][kBlock] = {};
  for (size_t b = 0; b < kFocusInputs; ++b) {
    const auto chain = sliceChainSource(concat.input(b));
    if (!chain) return "input " + std::to_string(b) + " is not a Slice with constant parameters";
    Value* x = chain->first;
    if (out.source && x != out.source) return "the Slices cut different tensors";
    if (!fusion::isStaticFloat32(x) || x->rank() != 4 || x->shape()[2] % kBlock || x->shape()[3] % kBlock)
      return "'" + x->name() + "' is not a static float32 NCHW tensor with even H and W";
    const auto off = focusOffset(*x, chain->second);
    if (!off)
      return "input " + std::to_string(b) + " does not take every other row and column of '" + x->name() +
             "'";
    if (seen[off->dy][off->dx]) return "two inputs take the same offset";
    seen[off->dy][off->dx] = true;
    out.source = x;
    out.offsets[b] = *off;
  }
  return "";
}

const char* const kConvProblem = "the Conv is grouped, auto-padded or has no constant float32 weights";

bool isFoldableConv(const Node& conv, const Value& t) {
  const Value* w = conv.input(1);
  return conv.opType() == "Conv" && conv.domain().empty() && conv.input(0) == &t && conv.numInputs() >= 2 &&
         conv.attrs().i("group", 1) == 1 && conv.attrs().s("auto_pad", "NOTSET") == "NOTSET" && w &&
         w->isConstant() && w->dtype() == DType::Float32 && w->rank() == 4;
}

// The equivalent Conv weights on x (file header, case 1).
Tensor focusConvWeights(const Tensor& w, const Focus& f, const std::vector<int64_t>& dilations) {
  const int64_t out_ch = w.dim(0), c = w.dim(1) / static_cast<int64_t>(kFocusInputs);
  const int64_t kh = w.dim(2), kw = w.dim(3), dh = dilations[0], dw = dilations[1];
  const int64_t kh2 = kBlock * dh * (kh - 1) + kBlock, kw2 = kBlock * dw * (kw - 1) + kBlock;
  Tensor r(DType::Float32, {out_ch, c, kh2, kw2});
  float* dst = r.data<float>();
  std::fill(dst, dst + r.numel(), 0.0f);
  const float* src = w.data<float>();
  for (int64_t o = 0; o < out_ch; ++o) {
    for (size_t b = 0; b < kFocusInputs; ++b) {
      for (int64_t ci = 0; ci < c; ++ci) {
        const int64_t old_c = static_cast<int64_t>(b) * c + ci;
        for (int64_t u = 0; u < kh; ++u) {
          for (int64_t v = 0; v < kw; ++v) {
            const int64_t row = kBlock * dh * u + f.offsets[b].dy, col = kBlock * dw * v + f.offsets[b].dx;
            dst[((o * c + ci) * kh2 + row) * kw2 + col] = src[((o * w.dim(1) + old_c) * kh + u) * kw + v];
          }
        }
      }
    }
  }
  return r;
}

std::vector<int64_t> scaled(std::vector<int64_t> v, int64_t factor) {
  for (int64_t& x : v) x *= factor;
  return v;
}

class FoldFocusIntoConv : public RewritePattern {
 public:
  FoldFocusIntoConv() : RewritePattern("fold_focus_into_conv", {"Conv"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* concat = fusion::producerIs(root.input(0), "Concat");
    if (!concat) return failure();
    Focus f;
    if (!describeFocus(*concat, f).empty()) return failure();  // the Concat pattern reports why
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root, "Focus into Conv '" + root.name() + "' not folded: " + why);
    };
    if (std::string p = m::interiorUseProblem(*concat->output()); !p.empty()) return refuse(p);
    if (!isFoldableConv(root, *concat->output())) return refuse(kConvProblem);
    const std::vector<int64_t> ones{1, 1};
    const auto strides = root.attrs().ints("strides", ones), dilations = root.attrs().ints("dilations", ones);
    const auto pads = root.attrs().ints("pads", {0, 0, 0, 0});
    Tensor w = focusConvWeights(root.input(1)->constant(), f, dilations);
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{w.dim(2), w.dim(3)});
    a.set("strides", scaled(strides, kBlock));
    a.set("pads", scaled(pads, kBlock));
    std::vector<Value*> inputs{f.source, rw.constant(std::move(w), root.name() + "_focus_w")};
    if (root.input(2)) inputs.push_back(root.input(2));
    rw.setInsertionPointBefore(&root);
    Node* conv = rw.createLike(*root.output(), "Conv", inputs, a, root.name());
    rw.replaceOp(&root, {conv->output()});
    return success();
  }
};

// SpaceToDepth block index of an offset (ONNX: channel (by * blocksize + bx) * C + c).
int64_t spaceToDepthBlock(const Offset& o) {
  return o.dy * kBlock + o.dx;
}

class FocusToSpaceToDepth : public RewritePattern {
 public:
  FocusToSpaceToDepth() : RewritePattern("focus_to_space_to_depth", {"Concat"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (root.numInputs() != kFocusInputs || !fusion::producerIs(root.input(0), "Slice")) return failure();
    Focus f;
    if (std::string why = describeFocus(root, f); !why.empty())
      return rw.notifyMatchFailure(root, "Concat '" + root.name() + "' is not a Focus: " + why);
    // A Conv reading the Focus takes it whole when it can (fold_focus_into_conv); otherwise say why
    // it cannot, since that pattern never sees this Focus once it is a SpaceToDepth.
    for (const Use& u : root.output()->uses()) {
      if (u.user->opType() != "Conv" || u.index != 0) continue;
      std::string why = m::interiorUseProblem(*root.output());
      if (why.empty() && isFoldableConv(*u.user, *root.output())) {
        if (rw.context().allowsNumericsChange()) return failure();
        why = "folding reorders float sums (optimization_level 3)";
      }
      if (why.empty()) why = kConvProblem;
      rw.recordMatchFailure(*u.user, "Focus into Conv '" + u.user->name() + "' not folded: " + why);
    }
    rw.setInsertionPointBefore(&root);
    Attributes a;
    a.set("blocksize", kBlock);
    Value* s2d = rw.create("SpaceToDepth", {f.source}, a, root.name() + "_s2d")->output();
    const int64_t c = f.source->shape()[1];
    std::vector<int64_t> order;
    for (const Offset& o : f.offsets) {
      for (int64_t ci = 0; ci < c; ++ci) order.push_back(spaceToDepthBlock(o) * c + ci);
    }
    Value* result = s2d;
    if (!isIdentityPerm(order)) {
      Attributes g;
      g.set("axis", int64_t{1});
      Value* indices = rw.constant(int64Vector(order), root.name() + "_block_order");
      result = rw.createLike(*root.output(), "Gather", {s2d, indices}, g, root.name())->output();
    }
    rw.replaceOp(&root, {result});
    return success();
  }
};

class FoldFocusPass : public PatternPass {
 public:
  const char* name() const override { return "fold_focus"; }
  const char* description() const override {
    return "YOLOv5 Focus (4 strided Slices + Concat) -> stride-2 Conv on the input, or SpaceToDepth";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<FoldFocusIntoConv>();
    p.add<FocusToSpaceToDepth>();
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldFocusPass() {
  return std::make_unique<FoldFocusPass>();
}

}  // namespace npuc
