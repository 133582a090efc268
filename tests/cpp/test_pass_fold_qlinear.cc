// fold_qlinear: QLinearConv / QLinearMatMul / ConvInteger / MatMulInteger -> DequantizeLinear,
// float Conv / MatMul, QuantizeLinear (or Cast to int32). Differential checks on graphs with a float
// input (Quantize/DynamicQuantize in front, Dequantize/Cast behind, so random float feeds work):
// the integer forms bit-exact; the QLinear forms within 1 LSB of the integer kernels, with the
// share of differing elements measured and printed.
#include <gtest/gtest.h>

#include <cstdio>

#include "ew_test_util.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using ewtest::randomInts;
using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

Tensor floatsOf(std::vector<float> v) {
  return Tensor::fromVector<float>(v, {static_cast<int64_t>(v.size())});
}

// x (float) -> Q(uint8) -> QLinearConv (int8 per-channel weights, int32 bias) -> DQ -> y.
struct QConvGraph {
  std::unique_ptr<Graph> g;
  float y_scale = 0.f;
};

QConvGraph qlinearConvGraph(uint32_t seed, int64_t c = 8, int64_t m = 6, int64_t group = 1) {
  GraphBuilder b;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 2.f);
  Value* x = b.input("x", {1, c, 9, 9});
  Value* xs = b.scalar(0.01f * u(rng));
  Value* xz = b.constant(Tensor::scalar<uint8_t>(128));
  Value* xq = b.op("QuantizeLinear", {x, xs, xz});
  std::vector<float> ws;
  for (int64_t i = 0; i < m; ++i) ws.push_back(0.002f * u(rng));
  Value* w = b.constant(randomInts<int8_t>({m, c / group, 3, 3}, -127, 127, seed + 1));
  Value* wz = b.constant(Tensor::fromVector<int8_t>(std::vector<int8_t>(static_cast<size_t>(m), 0), {m}));
  Value* bias = b.constant(randomInts<int32_t>({m}, -2000, 2000, seed + 2));
  QConvGraph out;
  out.y_scale = 0.004f * u(rng);
  Value* y = b.op("QLinearConv",
                  {xq, xs, xz, w, b.constant(floatsOf(ws)), wz, b.scalar(out.y_scale),
                   b.constant(Tensor::scalar<uint8_t>(100)), bias},
                  attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", group}}), "qconv");
  b.output(b.op("DequantizeLinear", {y, b.scalar(out.y_scale), b.constant(Tensor::scalar<uint8_t>(100))}));
  out.g = b.release();
  return out;
}

// Output elements whose value differs, and the largest difference in output steps.
struct LsbDiff {
  int64_t differ = 0, total = 0;
  double max_lsb = 0.0;
};

LsbDiff compareInSteps(const Graph& before, const Graph& after, float step, int seeds) {
  LsbDiff d;
  for (int s = 0; s < seeds; ++s) {
    auto feeds = passtest::randomFeeds(before, 7000u + 31u * static_cast<uint32_t>(s));
    const Tensor want = evalGraph(before, feeds).at(0), got = evalGraph(after, feeds).at(0);
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double lsb = std::abs(got.doubleAt(i) - want.doubleAt(i)) / step;
      d.differ += lsb > 0.5;
      d.max_lsb = std::max(d.max_lsb, lsb);
    }
    d.total += want.numel();
  }
  return d;
}

void expectVerifiedAndTyped(Graph& g) {
  verifyOptimizedGraph(g, "pass 'fold_qlinear'");
  passtest::expectTypesConsistent(g);
}

TEST(PassFoldQLinear, QLinearConvBecomesDqConvQWithinOneLsb) {
  LsbDiff all;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    QConvGraph q = qlinearConvGraph(seed, 8, 6, seed % 2 ? 1 : 2);
    auto original = q.g->clone();
    PassContext ctx;
    ctx.optimization_level = 3;
    EXPECT_EQ(createPass("fold_qlinear")->run(*q.g, ctx), 1u);
    expectVerifiedAndTyped(*q.g);
    EXPECT_EQ(countOps(*q.g, "QLinearConv"), 0u);
    EXPECT_EQ(countOps(*q.g, "Conv"), 1u);
    EXPECT_EQ(countOps(*q.g, "DequantizeLinear"), 4u);  // x, w, bias, and the original output DQ
    const LsbDiff d = compareInSteps(*original, *q.g, q.y_scale, 4);
    all.differ += d.differ;
    all.total += d.total;
    all.max_lsb = std::max(all.max_lsb, d.max_lsb);
  }
  std::printf("fold_qlinear QLinearConv: %lld of %lld outputs differ from the integer kernel, max %.3f LSB\n",
              static_cast<long long>(all.differ), static_cast<long long>(all.total), all.max_lsb);
  EXPECT_LE(all.max_lsb, 1.001);
  EXPECT_LE(all.differ * 100, all.total) << "near-ties only: at most 1% of the outputs";
}

TEST(PassFoldQLinear, QLinearMatMulPerColumnWithinOneLsbAndOnlyAtLevel3) {
  GraphBuilder b;
  Value* a = b.input("a", {2, 5, 16});
  Value* as = b.scalar(0.02f);
  Value* az = b.constant(Tensor::scalar<int8_t>(3));
  Value* aq = b.op("QuantizeLinear", {a, as, az});
  Value* bs = b.constant(floatsOf({0.01f, 0.012f, 0.02f, 0.005f}));
  Value* bz = b.constant(Tensor::scalar<int8_t>(0));  // per-tensor zero point beside per-column scales
  const float ys = 0.01f;
  Value* y = b.op("QLinearMatMul", {aq, as, az, b.constant(randomInts<int8_t>({16, 4}, -127, 127, 3)), bs, bz,
                                    b.scalar(ys), b.constant(Tensor::scalar<int8_t>(-5))});
  b.output(b.op("DequantizeLinear", {y, b.scalar(ys), b.constant(Tensor::scalar<int8_t>(-5))}));
  auto g = b.release();
  auto original = g->clone();
  PassContext level2;
  level2.optimization_level = 2;
  EXPECT_EQ(createPass("fold_qlinear")->run(*g, level2), 0u) << "it changes numerics: level 3 only";
  PassContext ctx;
  ctx.optimization_level = 3;
  EXPECT_EQ(createPass("fold_qlinear")->run(*g, ctx), 1u);
  expectVerifiedAndTyped(*g);
  EXPECT_EQ(countOps(*g, "MatMul"), 1u);
  const LsbDiff d = compareInSteps(*original, *g, ys, 16);
  std::printf("fold_qlinear QLinearMatMul: %lld of %lld outputs differ, max %.3f LSB\n",
              static_cast<long long>(d.differ), static_cast<long long>(d.total), d.max_lsb);
  EXPECT_LE(d.max_lsb, 1.001);
}

// x -> DynamicQuantizeLinear -> ConvInteger / MatMulInteger -> Cast(float): bit-exact, any level.
TEST(PassFoldQLinear, IntegerOpsAreRewrittenBitExactly) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 6, 6});
  Node* dq = b.node("DynamicQuantizeLinear", {x}, {}, "dql", 3);
  Value* zw = b.constant(Tensor::fromVector<uint8_t>({0, 128, 255}, {3}));
  Value* acc =
      b.op("ConvInteger",
           {dq->output(0), b.constant(randomInts<uint8_t>({3, 4, 3, 3}, 0, 255, 5)), dq->output(2), zw},
           attrs({{"strides", std::vector<int64_t>{2, 2}}}), "convint");
  Value* f = b.op("Cast", {acc}, attrs({{"to", int64_t{1}}}));
  Value* flat = b.op("Reshape", {f, b.int64s({1, -1})});  // [1, 12]
  Node* dq2 = b.node("DynamicQuantizeLinear", {flat}, {}, "dql2", 3);
  Value* mm = b.op("MatMulInteger",
                   {dq2->output(0), b.constant(randomInts<uint8_t>({12, 5}, 0, 255, 6)), dq2->output(2),
                    b.constant(Tensor::fromVector<uint8_t>({1, 2, 3, 4, 250}, {5}))});
  b.output(b.op("Cast", {mm}, attrs({{"to", int64_t{1}}})));
  auto g = b.release();
  const auto r = runPassChecked(*g, "fold_qlinear", /*rtol=*/0.0, /*level=*/1);
  EXPECT_EQ(r.changes, 2u);
  EXPECT_EQ(countOps(*g, "ConvInteger") + countOps(*g, "MatMulInteger"), 0u);
  EXPECT_EQ(countOps(*g, "Conv"), 1u);
  EXPECT_EQ(countOps(*g, "MatMul"), 1u);
}

TEST(PassFoldQLinear, RefusesWhatFloatCannotHoldOrScalesItCannotRead) {
  // K = 300 * 9 terms of up to 255 * 255 with weights unknown: sums may pass 2^24.
  GraphBuilder b;
  Value* x = b.input("x", {1, 300, 4, 4});
  Node* dq = b.node("DynamicQuantizeLinear", {x}, {}, "dql", 3);
  Value* w = b.input("w", {2, 300, 3, 3}, DType::UInt8);
  b.output(b.op("ConvInteger", {dq->output(0), w}, {}, "big"));
  PassContext ctx;
  ctx.optimization_level = 3;
  ctx.current_pass = "fold_qlinear";
  EXPECT_EQ(createPass("fold_qlinear")->run(b.graph(), ctx), 0u);
  bool said = false;
  for (const MatchFailure& f : ctx.match_failures) said |= f.reason.find(">= 2^24") != std::string::npos;
  EXPECT_TRUE(said) << "the refusal says why";

  // A bias needs x_scale * w_scale as a constant.
  GraphBuilder c;
  Value* xq = c.input("xq", {1, 2, 4, 4}, DType::UInt8);
  Value* xs = c.input("xs", {}, DType::Float32);
  c.output(c.op(
      "QLinearConv",
      {xq, xs, c.constant(Tensor::scalar<uint8_t>(0)), c.constant(randomInts<int8_t>({2, 2, 1, 1}, -3, 3, 1)),
       c.scalar(0.1f), c.constant(Tensor::scalar<int8_t>(0)), c.scalar(0.2f),
       c.constant(Tensor::scalar<uint8_t>(0)), c.constant(randomInts<int32_t>({2}, -9, 9, 2))},
      {}, "biased"));
  PassContext ctx2;
  ctx2.optimization_level = 3;
  ctx2.current_pass = "fold_qlinear";
  EXPECT_EQ(createPass("fold_qlinear")->run(c.graph(), ctx2), 0u);
  said = false;
  for (const MatchFailure& f : ctx2.match_failures)
    said |= f.reason.find("needs constant scales") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace npuc
