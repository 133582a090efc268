// The INT8 simulator: reference and fast paths of the MAC kernels agree to the bit on random
// geometries and parameters; each int8 op stays within a couple of quantization steps of the
// float model; FP16 mode stays within half precision.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opset/eval.h"
#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/accuracy_analysis.h"
#include "quant/sim/int8_conv.h"
#include "quant/sim/int8_linear.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

std::vector<int8_t> randomInt8(size_t n, std::mt19937& gen, int lo = -128, int hi = 127) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(gen));
  return v;
}

std::vector<FixedPointMultiplier> randomMultipliers(size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<double> log2m(-18.0, -6.0);  // typical s_x s_w / s_y
  std::vector<FixedPointMultiplier> m;
  for (size_t i = 0; i < n; ++i) m.push_back(quantizeMultiplier(std::exp2(log2m(gen))));
  return m;
}

ConvGeometry randomGeometry(std::mt19937& gen) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  ConvGeometry g;
  const int kind = pick(0, 2);  // 0 dense, 1 grouped, 2 depthwise
  g.groups = kind == 0 ? 1 : (kind == 1 ? pick(2, 3) : pick(1, 8));
  g.in_channels = g.groups * (kind == 2 ? 1 : pick(1, 5));
  g.out_channels = g.groups * (kind == 2 ? pick(1, 2) : pick(1, 6));
  g.batch = pick(1, 2);
  g.in_h = pick(1, 13);
  g.in_w = pick(1, 13);
  g.kernel_h = pick(1, 5);
  g.kernel_w = pick(1, 5);
  g.stride_h = pick(1, 3);
  g.stride_w = pick(1, 3);
  g.dilation_h = pick(1, 2);
  g.dilation_w = pick(1, 2);
  g.pad_top = pick(0, g.kernel_h - 1);
  g.pad_left = pick(0, g.kernel_w - 1);
  const int64_t pad_bottom = pick(0, g.kernel_h - 1), pad_right = pick(0, g.kernel_w - 1);
  const int64_t eff_h = (g.kernel_h - 1) * g.dilation_h + 1, eff_w = (g.kernel_w - 1) * g.dilation_w + 1;
  g.out_h = std::max<int64_t>(0, (g.in_h + g.pad_top + pad_bottom - eff_h) / g.stride_h + 1);
  g.out_w = std::max<int64_t>(0, (g.in_w + g.pad_left + pad_right - eff_w) / g.stride_w + 1);
  if (g.in_h + g.pad_top + pad_bottom < eff_h) g.out_h = 0;
  if (g.in_w + g.pad_left + pad_right < eff_w) g.out_w = 0;
  return g;
}

TEST(QuantSimConv, ReferenceAndFastAgreeToTheBit) {
  std::mt19937 gen(1234);
  int tested = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Int8ConvParams p;
    p.geometry = randomGeometry(gen);
    const ConvGeometry& g = p.geometry;
    if (g.out_h == 0 || g.out_w == 0) continue;
    const size_t cout = static_cast<size_t>(g.out_channels);
    p.weights = randomInt8(cout * static_cast<size_t>(g.reduction()), gen, -127, 127);
    std::uniform_int_distribution<int32_t> bias(-20000, 20000);
    for (size_t c = 0; c < cout; ++c) p.bias.push_back(bias(gen));
    p.input_zero_point = std::uniform_int_distribution<int>(-128, 127)(gen);
    p.output_zero_point = std::uniform_int_distribution<int>(-128, 127)(gen);
    p.multipliers = randomMultipliers(cout, gen);
    validateInt8Conv(p, "test");
    const std::vector<int8_t> x =
        randomInt8(static_cast<size_t>(g.batch * g.in_channels * g.in_h * g.in_w), gen);
    const size_t out_n = static_cast<size_t>(g.batch * g.out_channels * g.out_h * g.out_w);
    std::vector<int8_t> ref(out_n), fast(out_n);
    int8ConvReference(p, x.data(), ref.data());
    Int8ConvFast kernel(p);
    std::vector<uint8_t> ws(kernel.workspaceBytes());
    kernel.run(x.data(), fast.data(), ws.data());
    ASSERT_EQ(ref, fast) << "trial " << trial << ": groups " << g.groups << " cin " << g.in_channels
                         << " cout " << g.out_channels << " in " << g.in_h << "x" << g.in_w << " k "
                         << g.kernel_h << "x" << g.kernel_w << " stride " << g.stride_h << "," << g.stride_w
                         << " pad " << g.pad_top << "," << g.pad_left << " zx " << p.input_zero_point;
    ++tested;
  }
  EXPECT_GT(tested, 300);
}

TEST(QuantSimConv, RefusesReductionsThatCouldOverflow) {
  Int8ConvParams p;
  // 70000 products of |q_w| = 127 can exceed int32 (510 * 127 * 70000 > 2^31); of |q_w| = 1 not.
  p.geometry.in_channels = 70000;
  p.weights.assign(70000, 127);
  p.bias = {0};
  p.multipliers = {quantizeMultiplier(0.001)};
  EXPECT_THROW(validateInt8Conv(p, "big"), ConfigError);
  p.weights.assign(70000, 1);
  EXPECT_NO_THROW(validateInt8Conv(p, "big"));
}

TEST(QuantSimLinear, ReferenceAndFastAgreeToTheBit) {
  std::mt19937 gen(99);
  for (int trial = 0; trial < 100; ++trial) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    Int8LinearParams p;
    p.rows = pick(1, 7);
    p.depth = pick(1, 300);
    p.columns = pick(1, 40);
    p.weights = randomInt8(static_cast<size_t>(p.columns * p.depth), gen, -127, 127);
    for (int64_t c = 0; c < p.columns; ++c) p.bias.push_back(pick(-100000, 100000));
    p.input_zero_point = pick(-128, 127);
    p.output_zero_point = pick(-128, 127);
    p.multipliers = randomMultipliers(static_cast<size_t>(p.columns), gen);
    validateInt8Linear(p, "test");
    const std::vector<int8_t> x = randomInt8(static_cast<size_t>(p.rows * p.depth), gen);
    std::vector<int8_t> ref(static_cast<size_t>(p.rows * p.columns)), fast(ref.size());
    int8LinearReference(p, x.data(), ref.data());
    Int8LinearFast kernel(p);
    std::vector<uint8_t> ws(kernel.workspaceBytes());
    kernel.run(x.data(), fast.data(), ws.data());
    ASSERT_EQ(ref, fast) << "trial " << trial << " [" << p.rows << "x" << p.depth << "] x [" << p.depth << "x"
                         << p.columns << "]";
  }
}

TEST(QuantSimBatchMatMul, ReferenceAndFastAgreeToTheBit) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 100; ++trial) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    Int8BatchMatMulParams p;
    p.batch = pick(1, 3);
    p.m = pick(1, 9);
    p.k = pick(1, 200);
    p.n = pick(1, 17);
    p.zero_point_a = pick(-128, 127);
    p.zero_point_b = pick(-128, 127);
    p.output_zero_point = pick(-128, 127);
    p.multiplier = randomMultipliers(1, gen)[0];
    validateInt8BatchMatMul(p, "test");
    const std::vector<int8_t> a = randomInt8(static_cast<size_t>(p.batch * p.m * p.k), gen);
    const std::vector<int8_t> b = randomInt8(static_cast<size_t>(p.batch * p.k * p.n), gen);
    std::vector<int8_t> ref(static_cast<size_t>(p.batch * p.m * p.n)), fast(ref.size());
    int8BatchMatMulReference(p, a.data(), b.data(), ref.data());
    std::vector<uint8_t> ws(int8BatchMatMulWorkspaceBytes(p));
    int8BatchMatMulFast(p, a.data(), b.data(), fast.data(), ws.data());
    ASSERT_EQ(ref, fast) << "trial " << trial << " batch " << p.batch << " [" << p.m << "x" << p.k << "] x ["
                         << p.k << "x" << p.n << "] za " << p.zero_point_a << " zb " << p.zero_point_b;
  }
}

// ---- whole-op checks against the float model

struct Quantized {
  QuantPlan plan;
  std::unique_ptr<QuantizedExecutor> sim;
};

Quantized quantizeGraph(const Graph& g, const std::vector<Tensor>& samples, SimPath path = SimPath::Fast,
                        const QuantizerOptions& options = {}) {
  Calibrator cal(g);
  for (const Tensor& s : samples) cal.addSample({s});
  Quantized q;
  q.plan = buildQuantPlan(g, cal.ranges({}), options);
  q.sim = std::make_unique<QuantizedExecutor>(g, q.plan, SimOptions{SimMode::Int8, path});
  return q;
}

std::vector<Tensor> samplesOf(const Shape& shape, int n, uint32_t seed) {
  std::vector<Tensor> s;
  for (int i = 0; i < n; ++i) s.push_back(randomTensor(shape, seed + static_cast<uint32_t>(i), -2.0f, 2.0f));
  return s;
}

// Max |int8 result - float result| in units of the output's quantization step.
double errorInSteps(const Graph& g, const Quantized& q, const Tensor& x) {
  const Tensor ref = evalGraph(g, {{g.inputs()[0]->name(), x}})[0];
  const Tensor got = q.sim->run({x})[0];
  const float step = q.plan.at(g.outputs()[0]->name()).scales[0];
  double worst = 0.0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    worst = std::max(worst, std::abs(double{ref.data<float>()[i]} - got.data<float>()[i]) / step);
  }
  return worst;
}

// Calibrates on `samples`, checks a sample inside the calibrated range within `steps` steps.
void expectWithinSteps(const Graph& g, const Shape& shape, double steps) {
  const std::vector<Tensor> samples = samplesOf(shape, 8, 7);
  const Quantized q = quantizeGraph(g, samples);
  EXPECT_LE(errorInSteps(g, q, samples[3]), steps) << q.sim->describe();
}

TEST(QuantSimOps, SingleMacOpsWithinTwoSteps) {
  // One int8 MAC: input rounding (<= 0.5 step of s_x, times sum |w|) dominates; with inputs of
  // scale ~4/255 and a 3x3x3 kernel the error stays within a couple of output steps.
  {
    GraphBuilder b;
    Value* x = b.input("x", {1, 3, 9, 9});
    b.output(
        b.op("Conv", {x, b.randomConstant({4, 3, 3, 3}, 1, -0.3f, 0.3f), b.randomConstant({4}, 2)},
             attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}})));
    expectWithinSteps(b.graph(), {1, 3, 9, 9}, 2.0);
  }
  {
    GraphBuilder b;
    Value* x = b.input("x", {2, 16});
    b.output(b.op("Gemm", {x, b.randomConstant({8, 16}, 3, -0.2f, 0.2f), b.randomConstant({8}, 4)},
                  attrs({{"transB", int64_t{1}}})));
    expectWithinSteps(b.graph(), {2, 16}, 2.0);
  }
  {
    GraphBuilder b;
    Value* x = b.input("x", {1, 4, 6, 6});
    b.output(b.op("GlobalAveragePool", {x}));
    expectWithinSteps(b.graph(), {1, 4, 6, 6}, 1.0);
  }
  for (int64_t include_pad : {0, 1}) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 2, 7, 7});
    b.output(b.op("AveragePool", {x},
                  attrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                         {"count_include_pad", include_pad}})));
    SCOPED_TRACE(include_pad);
    expectWithinSteps(b.graph(), {1, 2, 7, 7}, 1.0);
  }
}

TEST(QuantSimOps, ElementwiseAndTablesWithinTheirRoundingBound) {
  // A table entry is within half an output step of f(dequantized input); the input itself was
  // rounded by up to half an input step, which f's slope carries to the output:
  //   |error| <= 0.5 + 0.5 * s_in * max|f'| / s_out   (output steps).
  // Inputs lie in [-2, 2], so max|f'| is 1/4 (Sigmoid), 1 (Tanh, Relu), e^2 (Exp).
  const std::vector<std::pair<const char*, double>> ops = {
      {"Sigmoid", 0.25}, {"Tanh", 1.0}, {"Exp", std::exp(2.0)}, {"Relu", 1.0}};
  for (const auto& [op, max_slope] : ops) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 2, 5, 5});
    Value* y = b.op(op, {x});
    b.output(y);
    SCOPED_TRACE(op);
    const std::vector<Tensor> samples = samplesOf({1, 2, 5, 5}, 8, 7);
    const Quantized q = quantizeGraph(b.graph(), samples);
    const double s_in = q.plan.at("x").scales[0], s_out = q.plan.at(y->name()).scales[0];
    const double bound = 0.5 + 0.5 * s_in * max_slope / s_out + 1e-3;
    EXPECT_LE(errorInSteps(b.graph(), q, samples[3]), bound) << q.sim->describe();
  }
  for (const char* op : {"Add", "Mul"}) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 3, 4, 4});
    b.output(b.op(op, {b.op("Sigmoid", {x}), b.randomConstant({3, 1, 1}, 5)}));
    SCOPED_TRACE(op);
    expectWithinSteps(b.graph(), {1, 3, 4, 4}, 2.0);
  }
}

TEST(QuantSimOps, ConcatAndDataMovementMoveBytes) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Value* t = b.op("Tanh", {x});
  Value* p =
      b.op("MaxPool", {x},
           attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{1, 1}}}));
  Value* pooled = b.op("Slice", {p, b.int64s({0}), b.int64s({3}), b.int64s({2})});
  Value* tt = b.op("Slice", {t, b.int64s({0, 0}), b.int64s({3, 3}), b.int64s({2, 3})});
  b.output(b.op("Concat", {pooled, tt}, attrs({{"axis", int64_t{1}}})));
  const std::vector<Tensor> samples = samplesOf({1, 2, 4, 4}, 8, 11);
  const Quantized q = quantizeGraph(b.graph(), samples);
  // MaxPool and Slice keep x's parameters; Concat rescales both inputs once.
  EXPECT_EQ(q.plan.at(p->name()).scales, q.plan.at("x").scales);
  EXPECT_EQ(q.plan.at(pooled->name()).zero_points, q.plan.at("x").zero_points);
  EXPECT_LE(errorInSteps(b.graph(), q, samples[0]), 1.5);
}

TEST(QuantSimOps, ActivationMatMulSplitAndNearestResize) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 4, 6});
  Node* split = b.node("Split", {x, b.int64s({3, 3})}, attrs({{"axis", int64_t{2}}}), "split", 2);
  Value* a = split->output(0);  // [2,4,3]
  Value* t =
      b.op("Transpose", {split->output(1)}, attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}));  // [2,3,4]
  Value* mm = b.op("MatMul", {a, t});                                                           // [2,4,4]
  Value* up = b.op(
      "Resize",
      {b.op("Unsqueeze", {mm, b.int64s({0})}), nullptr, b.constant(Tensor::fromVector<float>({1, 1, 2, 2}))},
      attrs({{"mode", std::string("nearest")}}));
  b.output(up);
  const std::vector<Tensor> samples = samplesOf({2, 4, 6}, 8, 51);
  const Quantized q = quantizeGraph(b.graph(), samples);
  const std::string plan = q.sim->describe();
  EXPECT_NE(plan.find("MatMul -> int8 matmul(activations)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Resize -> int8 shared-scale"), std::string::npos) << plan;
  EXPECT_EQ(q.plan.at(a->name()).scales, q.plan.at("x").scales);
  EXPECT_EQ(q.plan.at(up->name()).scales, q.plan.at(mm->name()).scales);
  // Two rounded inputs of K = 3 products: each term errs by up to half a step of either factor.
  EXPECT_LE(errorInSteps(b.graph(), q, samples[2]), 3.0) << plan;
}

TEST(QuantSimOps, ConvReluFusedClampsAndReferencePathMatchesFast) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 8, 8});
  Value* c = b.op("Conv", {x, b.randomConstant({6, 1, 3, 3}, 21, -0.5f, 0.5f), b.randomConstant({6}, 22)},
                  attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{3}}}));
  Value* r = b.op("Clip", {c, b.scalar(0.0f), b.scalar(1.5f)});
  Value* g = b.op("Gemm", {b.op("Flatten", {r}), b.randomConstant({384, 5}, 23, -0.1f, 0.1f)});
  b.output(g);
  const std::vector<Tensor> samples = samplesOf({1, 3, 8, 8}, 6, 31);
  const Quantized fast = quantizeGraph(b.graph(), samples, SimPath::Fast);
  const Quantized ref = quantizeGraph(b.graph(), samples, SimPath::Reference);
  // The conv output takes the clip's range: it starts at 0, so the zero point is -128.
  EXPECT_EQ(fast.plan.at(c->name()).zero_points[0], -128);
  EXPECT_EQ(fast.plan.at(c->name()).scales, fast.plan.at(r->name()).scales);
  for (const Tensor& s : samples) {
    EXPECT_TRUE(fast.sim->run({s})[0].bitwiseEqual(ref.sim->run({s})[0]));
  }
  EXPECT_LE(errorInSteps(b.graph(), fast, samples[1]), 3.0);
}

TEST(QuantSimOps, HybridLayerRunsInFp16) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8});
  b.output(b.op("Softmax", {b.op("Sigmoid", {x}, {}, "sig")}, attrs({{"axis", int64_t{1}}}), "soft"));
  QuantizerOptions opts;
  opts.hybrid_layers = {"sig"};
  const Quantized q = quantizeGraph(b.graph(), samplesOf({1, 8}, 4, 3), SimPath::Fast, opts);
  EXPECT_EQ(q.plan.precisionOf("sig"), NodePrecision::Float16);
  EXPECT_EQ(q.plan.precisionOf("soft"), NodePrecision::Float16);  // no int8 Softmax
  EXPECT_NE(q.sim->describe().find("sig: Sigmoid -> fp16"), std::string::npos) << q.sim->describe();
  opts.hybrid_layers = {"nope"};
  EXPECT_THROW(quantizeGraph(b.graph(), samplesOf({1, 8}, 1, 3), SimPath::Fast, opts), ConfigError);
}

TEST(QuantSimFp16, OutputsAreHalfValuesCloseToFloat) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* c = b.op("Conv", {x, b.randomConstant({4, 3, 3, 3}, 41), b.randomConstant({4}, 42)});
  b.output(b.op("Softmax", {b.op("Flatten", {c})}, attrs({{"axis", int64_t{1}}})));
  QuantizedExecutor sim(b.graph());
  const Tensor in = randomTensor({1, 3, 6, 6}, 5);
  const Tensor got = sim.run({in})[0];
  const Tensor ref = evalGraph(b.graph(), {{"x", in}})[0];
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float v = got.data<float>()[i];
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << "element " << i << " is not a half value";
    EXPECT_NEAR(v, ref.data<float>()[i], 2e-3 * std::abs(ref.data<float>()[i]) + 1e-4);
  }
}

TEST(QuantSimExecutor, WrongInputIsNamed) {
  GraphBuilder b;
  Value* x = b.input("image", {1, 4});
  b.output(b.op("Relu", {x}));
  QuantizedExecutor sim(b.graph());
  try {
    sim.run({randomTensor({1, 5}, 1)});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'image'"), std::string::npos) << e.what();
  }
}

TEST(QuantSimAccuracy, OneRowPerActivationWithDecreasingSqnrAlongAChain) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 8, 8});
  Value* c1 = b.op("Conv", {x, b.randomConstant({4, 3, 3, 3}, 61), b.randomConstant({4}, 62)},
                   attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "c1");
  Value* s = b.op("Softmax", {c1}, attrs({{"axis", int64_t{1}}}), "soft");
  b.output(s);
  const std::vector<Tensor> samples = samplesOf({1, 3, 8, 8}, 4, 71);
  const Quantized q = quantizeGraph(b.graph(), samples);
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(*q.sim, q.plan, {samples[0]});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].precision, "input");
  EXPECT_EQ(rows[1].node, "c1");
  EXPECT_EQ(rows[1].precision, "int8");
  EXPECT_EQ(rows[2].precision, "fp16");
  // Input rounding alone is ~40 dB for a uniform tensor over its own range (docs section 10).
  EXPECT_GT(rows[0].metrics.sqnr_db, 35.0);
  EXPECT_GT(rows[1].metrics.cosine, 0.99);
  EXPECT_LT(rows[1].metrics.sqnr_db, rows[0].metrics.sqnr_db) << "a quantized conv adds noise to its input's";
}

}  // namespace
}  // namespace npuc::quant
