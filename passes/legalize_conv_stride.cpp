// legalize_conv_stride: a Conv whose stride (or kernel) is beyond what the target NPU runs becomes
// a SpaceToDepth and a Conv within the limits, so it stays on the NPU instead of falling back to
// the CPU. The typical case is a ViT patch embedding (kernel 8, stride 8; RK3588 strides 1-7).
//
// SpaceToDepth with block b: t[n, (by*b + bx)*C + c, i, j] = x[n, c, b*i + by, b*j + bx]. A Conv on
// x with stride s (a multiple of b), kernel k, top/left pads p (multiples of b), dilation 1, reads
// x row s*r - p + u = b*(s/b*r - p/b + U) + by for u = b*U + by. So it equals a Conv on t with
//     stride s/b, kernel K = ceil(k/b), top/left pads p/b,
//     W'[o, (by*b + bx)*C + c, U, V] = W[o, c, b*U + by, b*V + bx]   (0 where b*U + by >= k),
// and bottom/right pads just large enough that the last window of t covers the last window of x
// (t rows past H/b are x rows past H: zero padding on both sides). The output size is unchanged
// (b*K >= k, and the t window never extends further than the x window by b or more).
//
// b is the smallest divisor of both strides for which the SpaceToDepth and the new Conv pass every
// check partitioning applies on the target (npu_candidate.h): the smallest block moves the least data. H and
// W must be multiples of b. The new Conv sums the same products in another order: level 3 only. INT8 keeps
// the same per-channel weight scales (the same weights plus zeros) and SpaceToDepth keeps its input's scale.
//
// Not legalized (a match failure says which): grouped and dilated Convs, auto_pad, a pad that is not
// a multiple of b, H or W not a multiple of b, a Conv the user put on the CPU (op_target), and
// Convs whose other violations a block size cannot remove.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <variant>

#include "passes/core/pattern_pass.h"
#include "passes/npu_candidate.h"

namespace npuc {
namespace {

constexpr size_t kSpatialDims = 2;  // 2-D convs only (1-D ones run as 2-D with height 1 anyway)

// The Conv on the SpaceToDepth output that replaces the original (file header), for one block size.
struct Legalized {
  int64_t block = 0;
  std::vector<int64_t> strides, kernel, pads;  // pads: top, left, bottom, right
};

std::vector<int64_t> attrOr(const Node& n, const char* name, std::vector<int64_t> fallback) {
  return n.attrs().ints(name, std::move(fallback));
}

// The legalized geometry for block `b`, or why `b` does not apply.
std::variant<Legalized, std::string> geometryFor(const Node& conv, int64_t b) {
  const Shape& x = conv.input(0)->shape();
  const Shape& w = conv.input(1)->shape();
  const Shape& y = conv.output()->shape();
  const auto strides = attrOr(conv, "strides", {1, 1});
  const auto pads = attrOr(conv, "pads", {0, 0, 0, 0});
  Legalized g;
  g.block = b;
  g.pads.assign(2 * kSpatialDims, 0);
  for (size_t d = 0; d < kSpatialDims; ++d) {
    const int64_t size = x[2 + d], k = w[2 + d], s = strides[d], begin = pads[d];
    if (size % b) return fmt::format("input dim {} ({}) is not a multiple of block {}", 2 + d, size, b);
    if (begin % b) return fmt::format("pad {} is not a multiple of block {}", begin, b);
    g.strides.push_back(s / b);
    g.kernel.push_back((k + b - 1) / b);
    g.pads[d] = begin / b;
    // The last output's window in t ends at row (s/b)*(out-1) - p/b + K - 1; t has size/b rows.
    const int64_t out = y[2 + d];
    g.pads[kSpatialDims + d] =
        std::max<int64_t>(0, g.strides[d] * (out - 1) - g.pads[d] + g.kernel[d] - size / b);
  }
  return g;
}

// Whether W' of `g` stays within the IR's tensor limit (a large block multiplies the input channels
// by b^2; computed without overflow).
bool fitsTensorLimit(const Value& w, const Legalized& g) {
  int64_t n = static_cast<int64_t>(sizeof(float));
  for (int64_t d : {w.shape()[0], w.shape()[1], g.block, g.block, g.kernel[0], g.kernel[1]})
    if (__builtin_mul_overflow(n, d, &n)) return false;
  return n <= kMaxTensorBytes;
}

// W' of the file header.
Tensor spaceToDepthWeights(const Tensor& w, const Legalized& g) {
  const int64_t out_ch = w.dim(0), c = w.dim(1), kh = w.dim(2), kw = w.dim(3), b = g.block;
  const int64_t kh2 = g.kernel[0], kw2 = g.kernel[1], c2 = c * b * b;
  Tensor r(DType::Float32, {out_ch, c2, kh2, kw2});
  float* dst = r.data<float>();  // zero-filled: the taps past the kernel stay 0
  const float* src = w.data<float>();
  for (int64_t o = 0; o < out_ch; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t u = 0; u < kh; ++u)
        for (int64_t v = 0; v < kw; ++v) {
          const int64_t block = (u % b) * b + (v % b);
          dst[((o * c2 + block * c + ci) * kh2 + u / b) * kw2 + v / b] =
              src[((o * c + ci) * kh + u) * kw + v];
        }
  return r;
}

// Every NPU check the SpaceToDepth and the new Conv of `g` fail (npu_candidate.h).
std::vector<Violation> legalizedViolations(const Node& conv, const Legalized& g, const SocProfile& soc) {
  const Value& x = *conv.input(0);
  const Shape& xs = x.shape();
  const Shape& ws = conv.input(1)->shape();
  const int64_t b = g.block;
  const Shape t{xs[0], xs[1] * b * b, xs[2] / b, xs[3] / b};
  Attributes s2d;
  s2d.set("blocksize", b);
  std::vector<Violation> all = candidateViolations("SpaceToDepth", {{x.dtype(), xs}}, s2d, x.dtype(), t, soc);
  Attributes a;
  a.set("kernel_shape", g.kernel);
  a.set("strides", g.strides);
  a.set("pads", g.pads);
  const CandidateInput weights{DType::Float32, {ws[0], ws[1] * b * b, g.kernel[0], g.kernel[1]}, true};
  for (Violation& v : candidateViolations("Conv", {{x.dtype(), t}, weights}, a, conv.output()->dtype(),
                                          conv.output()->shape(), soc))
    all.push_back(std::move(v));
  return all;
}

class LegalizeConvStride : public RewritePattern {
 public:
  LegalizeConvStride() : RewritePattern("legalize_conv_stride", {"Conv"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const auto subject = legalizationSubject(root, rw.context(), {"Conv.stride", "Conv.kernel"});
    if (!subject) return failure();
    const SocProfile& soc = *subject->soc;
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root, fmt::format("Conv '{}' ({}) not legalized for {}: {}", root.name(),
                                                     subject->violations.front().message, soc.name, why));
    };
    if (subject->placed_by_user) return refuse("op_target places it");
    const Value* w = root.input(1);
    if (root.input(0)->rank() != 4 || !w || !w->isConstant() || w->dtype() != DType::Float32 ||
        w->rank() != 4)
      return refuse("not a 2-D Conv with constant float32 weights");
    if (root.attrs().i("group", 1) != 1) return refuse("grouped");
    if (root.attrs().s("auto_pad", "NOTSET") != "NOTSET") return refuse("auto_pad");
    for (int64_t d : attrOr(root, "dilations", {1, 1}))
      if (d != 1) return refuse("dilated");
    const auto strides = attrOr(root, "strides", {1, 1});
    const int64_t common = std::gcd(strides[0], strides[1]);
    // A block must also divide H and W, so none beyond the smaller of them can work: this bounds the
    // search by a real tensor dim (a hostile stride of 2^40 costs no more than one of 64).
    const Shape& xs = root.input(0)->shape();
    const int64_t largest = std::min({common, xs[2], xs[3]});
    std::string why;  // one entry per block size tried
    for (int64_t b = 2; b <= largest; ++b) {
      if (common % b) continue;
      auto g = geometryFor(root, b);
      std::string reason;
      if (auto* r = std::get_if<std::string>(&g)) {
        reason = *r;
      } else if (!fitsTensorLimit(*w, std::get<Legalized>(g))) {
        reason = "the re-laid-out weights would exceed the tensor size limit";
      } else if (std::vector<Violation> left = legalizedViolations(root, std::get<Legalized>(g), soc);
                 !left.empty()) {
        reason = left.front().message;
      } else {
        rewrite(root, std::get<Legalized>(g), rw);
        return success();
      }
      why += fmt::format("{}block {}: {}", why.empty() ? "" : "; ", b, reason);
    }
    if (why.empty())
      why = fmt::format("no block size divides strides {}x{} and input {}x{}", strides[0], strides[1], xs[2],
                        xs[3]);
    return refuse(why);
  }

 private:
  static void rewrite(Node& root, const Legalized& g, Rewriter& rw) {
    rw.setInsertionPointBefore(&root);
    Attributes s2d_attrs;
    s2d_attrs.set("blocksize", g.block);
    Value* t = rw.create("SpaceToDepth", {root.input(0)}, s2d_attrs, root.name())->output();
    Attributes a;
    a.set("kernel_shape", g.kernel);
    a.set("strides", g.strides);
    a.set("pads", g.pads);
    std::vector<Value*> inputs{
        t, rw.constant(spaceToDepthWeights(root.input(1)->constant(), g), root.name() + "_s2d_w")};
    if (root.input(2)) inputs.push_back(root.input(2));
    Node* conv = rw.createLike(*root.output(), "Conv", inputs, a, root.name());
    rw.replaceOp(&root, {conv->output()});
  }
};

class LegalizeConvStridePass : public PatternPass {
 public:
  const char* name() const override { return "legalize_conv_stride"; }
  const char* description() const override {
    return "Conv with a stride or kernel beyond the target NPU's limits -> SpaceToDepth + Conv within them "
           "(target stage only)";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<LegalizeConvStride>(); }
};

}  // namespace

std::unique_ptr<Pass> createLegalizeConvStridePass() {
  return std::make_unique<LegalizeConvStridePass>();
}

}  // namespace npuc
