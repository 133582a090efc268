// legalize_pool_window: a MaxPool / AveragePool whose kernel or stride is beyond what the target NPU
// runs (RK3588: kernel 1-7, stride 1-8) becomes pools within the limits, so it stays on the NPU.
//
// Two exact forms, for pools without padding or dilation and with ceil_mode 0:
//  1. A window covering the whole input (kernel == H x W): one output per channel, which is what
//     GlobalMaxPool / GlobalAveragePool compute (exports write a global pool this way, e.g. a 14x14
//     AveragePool at the end of a backbone).
//  2. Non-overlapping windows (kernel == stride, k = a * b per dim): a pool a/a then a pool b/b.
//     Output row j of the second covers rows j*b .. j*b+b-1 of the first, i.e. input rows
//     j*k .. j*k+k-1, and floor(floor(H / a) / b) == floor(H / k), so sizes and windows match. The max
//     of maxima is the max; the mean of b means of a elements is the mean of k elements.
// MaxPool is bit-exact; AveragePool sums in another order (level 3). The forms are tried in that order,
// the second with the split of each kernel whose first factor is largest; each candidate is kept only
// if the partition's own checks accept it (npu_candidate.h).
//
// Not legalized (a match failure says why): padding, dilation, ceil_mode, a MaxPool whose Indices
// output is used, overlapping windows that do not cover the input, a kernel with no split into
// factors within the limits (a prime above the limit), and a pool the user put on the CPU (op_target).
#include <fmt/format.h>

#include <optional>
#include <utility>

#include "passes/core/pattern_pass.h"
#include "passes/npu_candidate.h"

namespace npuc {
namespace {

constexpr size_t kSpatialDims = 2;

std::vector<int64_t> attrOr(const Node& n, const char* name, std::vector<int64_t> fallback) {
  return n.attrs().ints(name, std::move(fallback));
}

// One pool of the replacement: its kernel (== its stride) per dim, and its output shape.
struct PoolStage {
  std::vector<int64_t> kernel;
  Shape out;
};

// The divisors of n > 0, largest first, in O(sqrt(n)) (a kernel may be as large as a tensor dim).
std::vector<int64_t> divisorsDescending(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  large.insert(large.end(), small.rbegin(), small.rend());
  return large;
}

Attributes stageAttrs(const PoolStage& s) {
  Attributes a;
  a.set("kernel_shape", s.kernel);
  a.set("strides", s.kernel);
  return a;
}

Shape pooledShape(const Shape& in, const std::vector<int64_t>& kernel) {
  return {in[0], in[1], in[2] / kernel[0], in[3] / kernel[1]};
}

// Why the pool cannot be rewritten at all (empty if it can be tried).
std::string shapeProblem(const Node& pool) {
  const Value* x = pool.input(0);
  if (x->rank() != 4) return "not a 2-D pool";
  if (pool.numOutputs() > 1 && (pool.output(1)->hasUses() || pool.output(1)->isGraphOutput()))
    return "its Indices output is used";
  if (pool.attrs().s("auto_pad", "NOTSET") != "NOTSET") return "auto_pad";
  for (int64_t p : attrOr(pool, "pads", {0, 0, 0, 0}))
    if (p != 0) return "padded";
  for (int64_t d : attrOr(pool, "dilations", {1, 1}))
    if (d != 1) return "dilated";
  if (pool.attrs().i("ceil_mode", 0) != 0) return "ceil_mode";
  return "";
}

class LegalizePoolWindow : public RewritePattern {
 public:
  LegalizePoolWindow(const char* name, const char* op, const char* global_op, bool changes_numerics)
      : RewritePattern(name, {op}, changes_numerics), op_(op), global_op_(global_op) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const auto subject = legalizationSubject(root, rw.context(), {op_ + ".kernel", op_ + ".stride"});
    if (!subject) return failure();
    const SocProfile& soc = *subject->soc;
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root,
                                   fmt::format("{} '{}' ({}) not legalized for {}: {}", op_, root.name(),
                                               subject->violations.front().message, soc.name, why));
    };
    if (subject->placed_by_user) return refuse("op_target places it");
    if (std::string why = shapeProblem(root); !why.empty()) return refuse(why);
    const Value& x = *root.input(0);
    const Shape& in = x.shape();
    const auto kernel = attrOr(root, "kernel_shape", {});
    const auto strides = attrOr(root, "strides", {1, 1});
    if (kernel.size() != kSpatialDims) return refuse("no 2-D kernel_shape");

    if (kernel[0] == in[2] && kernel[1] == in[3]) {
      const auto left =
          candidateViolations(global_op_, {{x.dtype(), in}}, {}, x.dtype(), root.output()->shape(), soc);
      if (!left.empty()) return refuse(fmt::format("as {}: {}", global_op_, left.front().message));
      rw.setInsertionPointBefore(&root);
      replace(root, {rw.createLike(*root.output(), global_op_, {root.input(0)}, {}, root.name())->output()},
              rw);
      return success();
    }
    if (kernel != strides) return refuse("overlapping windows that do not cover the whole input");
    const auto stages = split(x, kernel, soc);
    if (!stages)
      return refuse(
          fmt::format("kernel {}x{} has no split into two pools within the limits", kernel[0], kernel[1]));
    rw.setInsertionPointBefore(&root);
    Value* first = rw.create(op_, {root.input(0)}, stageAttrs(stages->first), root.name())->output();
    replace(root,
            {rw.createLike(*root.output(), op_, {first}, stageAttrs(stages->second), root.name())->output()},
            rw);
    return success();
  }

 private:
  // The two stages of form 2 whose first kernel is largest and both pass the checks.
  std::optional<std::pair<PoolStage, PoolStage>> split(const Value& x, const std::vector<int64_t>& k,
                                                       const SocProfile& soc) const {
    for (int64_t a : divisorsDescending(k[0])) {
      for (int64_t b : divisorsDescending(k[1])) {
        if (a == k[0] && b == k[1]) continue;  // that is the pool itself
        PoolStage s1{{a, b}, pooledShape(x.shape(), {a, b})};
        PoolStage s2{{k[0] / a, k[1] / b}, pooledShape(s1.out, {k[0] / a, k[1] / b})};
        if (candidateViolations(op_, {{x.dtype(), x.shape()}}, stageAttrs(s1), x.dtype(), s1.out, soc)
                .empty() &&
            candidateViolations(op_, {{x.dtype(), s1.out}}, stageAttrs(s2), x.dtype(), s2.out, soc).empty())
          return std::make_pair(s1, s2);
      }
    }
    return std::nullopt;
  }

  // Replaces the pool's first output; an unused Indices output goes with it.
  static void replace(Node& root, std::vector<Value*> values, Rewriter& rw) {
    if (root.numOutputs() > 1) values.push_back(nullptr);
    rw.replaceOp(&root, values);
  }

  std::string op_, global_op_;
};

class LegalizePoolWindowPass : public PatternPass {
 public:
  const char* name() const override { return "legalize_pool_window"; }
  const char* description() const override {
    return "MaxPool / AveragePool with a kernel or stride beyond the target NPU's limits -> a global pool, "
           "or two "
           "pools within them (target stage only)";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<LegalizePoolWindow>("legalize_maxpool_window", "MaxPool", "GlobalMaxPool",
                              /*changes_numerics=*/false);
    p.add<LegalizePoolWindow>("legalize_averagepool_window", "AveragePool", "GlobalAveragePool",
                              /*changes_numerics=*/true);
  }
};

}  // namespace

std::unique_ptr<Pass> createLegalizePoolWindowPass() {
  return std::make_unique<LegalizePoolWindowPass>();
}

}  // namespace npuc
