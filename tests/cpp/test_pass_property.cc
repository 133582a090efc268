// Property test of the whole optimize() pipeline: random small valid graphs (built from the ops
// and patterns the rewrite and fusion passes target) must, after optimization at level 3, still
// verify, keep their output names and count, and compute the same results as before within a
// relative tolerance. A failing seed prints itself and both graph dumps so it can be replayed.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;

// Level-3 passes reassociate (BatchNorm folding, fused LayerNorm statistics), so results move by
// a few float ulps relative to the output's magnitude; a real miscompile is off by far more.
constexpr double kRelativeTolerance = 1e-4;
constexpr uint32_t kNumSeeds = 300;
constexpr int kFeedSetsPerGraph = 2;
// Keeps graphs small enough for 300 of them to optimize and evaluate in seconds.
constexpr int kMinOps = 4;
constexpr int kMaxOps = 14;
constexpr int64_t kMaxChannels = 16;
// After this many failing seeds the rest are skipped: one dump pair is enough to start on.
constexpr int kMaxReportedFailures = 3;

// Builds one random graph from a seed. Every value in the pool is a 4-D float tensor; dim 1 plays
// the channel role for Conv, BatchNormalization, per-channel constants, Concat and Slice.
class RandomGraphGenerator {
 public:
  explicit RandomGraphGenerator(uint32_t seed) : rng_(seed) {}

  std::unique_ptr<Graph> build() {
    const int64_t c = uniform(1, 6), h = uniform(1, 5), w = uniform(1, 5);
    pool_.push_back(b_.input("x", {1, c, h, w}));
    if (chance(0.3)) pool_.push_back(b_.input("y", {1, c, h, w}));
    const int num_ops = static_cast<int>(uniform(kMinOps, kMaxOps));
    for (int i = 0; i < num_ops; ++i) addRandomOp();
    chooseOutputs();
    b_.graph().verify();
    return b_.release();
  }

 private:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  uint32_t nextSeed() { return static_cast<uint32_t>(rng_()); }
  template <typename T>
  T pickOne(const std::vector<T>& items) {
    return items[static_cast<size_t>(uniform(0, static_cast<int64_t>(items.size()) - 1))];
  }

  // Mostly one of the newest values, so chains grow deep; sometimes any value, so values fan out.
  Value* pickOperand() {
    const int64_t n = static_cast<int64_t>(pool_.size());
    const int64_t lo = chance(0.7) ? std::max<int64_t>(0, n - 3) : 0;
    return pool_[static_cast<size_t>(uniform(lo, n - 1))];
  }
  // Another pool value of exactly `shape` (for two-branch binaries), or null.
  Value* pickSameShape(const Shape& shape, const Value* not_this) {
    std::vector<Value*> candidates;
    for (Value* v : pool_) {
      if (v != not_this && v->shape() == shape) candidates.push_back(v);
    }
    if (candidates.empty()) return nullptr;
    return pickOne(candidates);
  }
  Value* perChannelConstant(int64_t channels, float lo, float hi) {
    // Both broadcast spellings exporters produce: [1,C,1,1] and [C,1,1].
    const Shape shape = chance(0.5) ? Shape{1, channels, 1, 1} : Shape{channels, 1, 1};
    return b_.randomConstant(shape, nextSeed(), lo, hi);
  }

  void addRandomOp() {
    Value* x = pickOperand();
    Value* out = nullptr;
    switch (uniform(0, 13)) {
      case 0: out = conv(x); break;
      case 1: out = batchNorm(x); break;
      case 2: out = b_.op("Relu", {x}); break;
      case 3: out = clip(x); break;
      case 4: out = b_.op("Sigmoid", {x}); break;
      case 5: out = silu(x); break;
      case 6: out = binary(x); break;
      case 7: out = transpose(x); break;
      case 8: out = reshapeRoundTrip(x); break;
      case 9: out = concatChannels(x); break;
      case 10: out = sliceChannels(x); break;
      case 11: out = b_.op("ReduceMean", {x, b_.int64s({-1})}, attrs({{"keepdims", int64_t{1}}})); break;
      case 12: out = layerNorm(x); break;
      default: out = conv(x); break;  // the backbone of real models: a little extra weight
    }
    if (out != nullptr) pool_.push_back(out);
  }

  Value* conv(Value* x) {
    const int64_t cin = x->shape()[1], h = x->shape()[2], w = x->shape()[3];
    std::vector<int64_t> divisors;
    for (int64_t g = 1; g <= cin; ++g) {
      if (cin % g == 0) divisors.push_back(g);
    }
    const bool depthwise = chance(0.3);
    const int64_t group = depthwise ? cin : pickOne(divisors);
    // At most 6 output channels per conv unless the groups alone need more (cout % group == 0).
    const int64_t cout = depthwise ? cin : group * uniform(1, std::max<int64_t>(1, 6 / group));
    const int64_t k = chance(0.5) ? 1 : 3;
    // Unpadded 3x3 needs at least 3x3 spatial; padded ("same") works everywhere.
    const int64_t pad = (k == 3 && (h < 3 || w < 3 || chance(0.6))) ? 1 : 0;
    const int64_t fan_in = (cin / group) * k * k;
    const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));  // keeps activations O(1)
    std::vector<Value*> ins = {x, b_.randomConstant({cout, cin / group, k, k}, nextSeed(), -bound, bound)};
    if (chance(0.5)) ins.push_back(b_.randomConstant({cout}, nextSeed()));
    return b_.op("Conv", ins,
                 attrs({{"group", group},
                        {"kernel_shape", std::vector<int64_t>{k, k}},
                        {"pads", std::vector<int64_t>{pad, pad, pad, pad}}}));
  }

  Value* batchNorm(Value* x) {
    const int64_t c = x->shape()[1];
    auto vec = [&](float lo, float hi) { return b_.randomConstant({c}, nextSeed(), lo, hi); };
    return b_.op("BatchNormalization",
                 {x, vec(0.5f, 1.5f), vec(-0.5f, 0.5f), vec(-0.5f, 0.5f), vec(0.5f, 1.5f)},
                 attrs({{"epsilon", 1e-5f}}));
  }

  // Clip(0, 6) is ReLU6 to fuse_activations; the other bounds must stay a plain Clip.
  Value* clip(Value* x) {
    const bool relu6 = chance(0.5);
    return b_.op("Clip", {x, b_.scalar(relu6 ? 0.0f : -0.5f), b_.scalar(relu6 ? 6.0f : 0.5f)});
  }

  Value* silu(Value* x) {
    Value* s = b_.op("Sigmoid", {x});
    return chance(0.5) ? b_.op("Mul", {x, s}) : b_.op("Mul", {s, x});
  }

  Value* binary(Value* x) {
    const char* op = chance(0.5) ? "Mul" : "Add";
    Value* other = chance(0.5) ? pickSameShape(x->shape(), x) : nullptr;
    if (other == nullptr) other = perChannelConstant(x->shape()[1], 0.5f, 1.5f);
    return chance(0.5) ? b_.op(op, {x, other}) : b_.op(op, {other, x});
  }

  Value* transpose(Value* x) {
    std::vector<int64_t> perm(4);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng_);
    Value* t = b_.op("Transpose", {x}, attrs({{"perm", perm}}));
    if (!chance(0.5)) return t;
    std::vector<int64_t> inverse(4);
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    if (chance(0.4)) t = b_.op("Relu", {t});  // something between the pair for transpose_reorder
    return b_.op("Transpose", {t}, attrs({{"perm", inverse}}));
  }

  // Flatten (or Reshape to 3-D), optionally an elementwise op, then Reshape back to 4-D.
  Value* reshapeRoundTrip(Value* x) {
    const Shape& s = x->shape();
    Value* flat = chance(0.5) ? b_.op("Flatten", {x}, attrs({{"axis", uniform(1, 3)}}))
                              : b_.op("Reshape", {x, b_.int64s({s[0], s[1] * s[2], s[3]})});
    if (chance(0.3)) flat = b_.op("Relu", {flat});
    return b_.op("Reshape", {flat, b_.int64s({s[0], s[1], s[2], s[3]})});
  }

  Value* concatChannels(Value* x) {
    if (x->shape()[1] * 2 > kMaxChannels) return nullptr;
    std::vector<Value*> partners;
    for (Value* v : pool_) {
      const Shape& s = v->shape();
      if (s[0] == x->shape()[0] && s[2] == x->shape()[2] && s[3] == x->shape()[3] &&
          x->shape()[1] + s[1] <= kMaxChannels)
        partners.push_back(v);
    }
    Value* other = pickOne(partners);  // x is one
    return chance(0.5) ? b_.op("Concat", {x, other}, attrs({{"axis", int64_t{1}}}))
                       : b_.op("Concat", {other, x}, attrs({{"axis", int64_t{1}}}));
  }

  Value* sliceChannels(Value* x) {
    const int64_t c = x->shape()[1];
    if (c < 2) return nullptr;
    auto slice = [&](Value* v, int64_t start, int64_t end) {
      return b_.op("Slice", {v, b_.int64s({start}), b_.int64s({end}), b_.int64s({1})});
    };
    const int64_t start = uniform(0, c - 1), end = uniform(start + 1, c);
    Value* s = slice(x, start, end);
    // A second slice of the slice, for merge_slices.
    if (end - start >= 2 && chance(0.4)) s = slice(s, 1, end - start);
    return s;
  }

  // The decomposed LayerNorm over the last axis, as exporters write it.
  Value* layerNorm(Value* x) {
    const int64_t w = x->shape()[3];
    Value* mean = b_.op("ReduceMean", {x, b_.int64s({-1})}, attrs({{"keepdims", int64_t{1}}}));
    Value* d = b_.op("Sub", {x, mean});
    Value* sq = b_.op("Pow", {d, b_.scalar(2.0f)});
    Value* var = b_.op("ReduceMean", {sq, b_.int64s({-1})}, attrs({{"keepdims", int64_t{1}}}));
    Value* std_dev = b_.op("Sqrt", {b_.op("Add", {var, b_.scalar(1e-5f)})});
    Value* n = b_.op("Div", {d, std_dev});
    n = b_.op("Mul", {n, b_.randomConstant({w}, nextSeed(), 0.5f, 1.5f)});
    return b_.op("Add", {n, b_.randomConstant({w}, nextSeed(), -0.5f, 0.5f)});
  }

  // The newest value always; sometimes an interior node output as well, which pins it against
  // fusions that would swallow it.
  void chooseOutputs() {
    std::vector<Value*> outputs = {pool_.back()};
    while (chance(0.35)) {
      Value* v = pool_[static_cast<size_t>(uniform(0, static_cast<int64_t>(pool_.size()) - 1))];
      if (v->producer() != nullptr && std::find(outputs.begin(), outputs.end(), v) == outputs.end())
        outputs.push_back(v);
      if (outputs.size() >= 3) break;
    }
    for (Value* v : outputs) b_.output(v);
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  std::vector<Value*> pool_;
};

double relativeError(const Tensor& got, const Tensor& want) {
  double max_diff = 0.0, max_ref = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    max_diff = std::max(max_diff, std::abs(got.doubleAt(i) - want.doubleAt(i)));
    max_ref = std::max(max_ref, std::abs(want.doubleAt(i)));
  }
  if (std::isnan(max_diff)) return INFINITY;
  return max_diff / std::max(max_ref, 1e-6);
}

// Checks the properties for one optimized graph; returns the first violation, or "".
std::string findViolation(const Graph& original, const Graph& optimized, uint32_t seed) {
  if (original.outputs().size() != optimized.outputs().size()) return "the number of graph outputs changed";
  for (size_t i = 0; i < original.outputs().size(); ++i) {
    if (original.outputs()[i]->name() != optimized.outputs()[i]->name())
      return "output " + std::to_string(i) + " renamed from '" + original.outputs()[i]->name() + "' to '" +
             optimized.outputs()[i]->name() + "'";
  }
  for (int f = 0; f < kFeedSetsPerGraph; ++f) {
    const auto feeds = passtest::randomFeeds(original, seed * 31u + static_cast<uint32_t>(f) * 7u);
    const std::vector<Tensor> want = evalGraph(original, feeds);
    const std::vector<Tensor> got = evalGraph(optimized, feeds);
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string what = "output '" + original.outputs()[i]->name() + "'";
      if (got[i].shape() != want[i].shape() || got[i].dtype() != want[i].dtype())
        return what + " changed type or shape";
      const double err = relativeError(got[i], want[i]);
      if (err > kRelativeTolerance) return what + " relative error " + std::to_string(err);
    }
  }
  return "";
}

// Optimizes a copy of `original` and returns the first violated property, or "".
std::string checkSeed(const Graph& original, uint32_t seed, std::unique_ptr<Graph>& optimized) {
  optimized = original.clone();
  try {
    OptimizeOptions options;
    options.optimization_level = 3;
    optimize(*optimized, options);
    optimized->verify();
    return findViolation(original, *optimized, seed);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

// Minimized from seeds 60, 137 and 178: a decomposed LayerNorm over a last axis of size 1 (every
// row is constant, so the exact result is beta) fuses to LayerNormalization, whose kernel with a
// one-element gamma computes x * (g / std) - mean * (g / std): with std = sqrt(eps) the two
// products cancel only to ~ulp(x) / sqrt(eps), instead of centring x first as the graph did.
TEST(PassPropertyTest, LayerNormOverUnitLastAxisStaysExact) {
  constexpr float kBeta = 0.01f;  // small, so an absolute error of ~1e-5 is visible relative to it
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 1});
  Value* mean = b.op("ReduceMean", {x, b.int64s({-1})}, attrs({{"keepdims", int64_t{1}}}));
  Value* d = b.op("Sub", {x, mean});
  Value* var = b.op("ReduceMean", {b.op("Pow", {d, b.scalar(2.0f)}), b.int64s({-1})},
                    attrs({{"keepdims", int64_t{1}}}));
  Value* n = b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-5f)})})});
  n = b.op("Mul", {n, b.constant(Tensor::fromVector<float>({1.25f}, {1}))});
  b.output(b.op("Add", {n, b.constant(Tensor::fromVector<float>({kBeta}, {1}))}));
  std::unique_ptr<Graph> optimized = b.graph().clone();
  optimize(*optimized);
  ASSERT_EQ(passtest::countOps(*optimized, "LayerNormalization"), 1u) << optimized->dump();
  const auto feeds = passtest::randomFeeds(b.graph(), 7);
  const Tensor want = evalGraph(b.graph(), feeds)[0];
  const Tensor got = evalGraph(*optimized, feeds)[0];
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_FLOAT_EQ(want.data<float>()[i], kBeta) << i;
  EXPECT_LE(relativeError(got, want), kRelativeTolerance) << optimized->dump();
}

TEST(PassPropertyTest, RandomGraphsOptimizeToEquivalentGraphs) {
  int failures = 0;
  for (uint32_t seed = 0; seed < kNumSeeds && failures < kMaxReportedFailures; ++seed) {
    std::unique_ptr<Graph> original;
    ASSERT_NO_THROW(original = RandomGraphGenerator(seed).build())
        << "generator made an invalid graph, seed " << seed;
    std::unique_ptr<Graph> optimized;
    const std::string violation = checkSeed(*original, seed, optimized);
    if (violation.empty()) continue;
    ++failures;
    ADD_FAILURE() << "seed " << seed << ": " << violation << "\n--- original\n"
                  << original->dump() << "--- optimized\n"
                  << optimized->dump();
  }
}

}  // namespace
}  // namespace npuc
