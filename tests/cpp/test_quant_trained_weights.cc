// What real trained weights contain and random ones do not: dead channels (|w| ~ 1e-15 after
// weight decay and BN folding), biases far larger than their channel's weights, channels whose
// magnitudes span many decades, BatchNorm with zero gamma or variance, constant and one-sided
// activations, outliers. Each must build in INT8 (never a refusal for a numeric reason a real
// quantizer handles), say which tensors it adjusted, and stay close to FP32 on both simulator
// paths. The rules are in docs/quantization.md, "Weight scales and int32 biases".
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "opset/eval.h"
#include "pass_test_util.h"
#include "passes/optimize.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/int_limits.h"
#include "quant/sim/accumulator_check.h"
#include "quant/sim/quantized_executor.h"
#include "quant/weight_quant.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

Tensor floats(const Shape& shape, std::vector<float> values) {
  Tensor t(DType::Float32, shape);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

bool anyWarningHas(const QuantPlan& plan, const std::string& text) {
  for (const std::string& w : plan.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

// ---- the weight-scale rules on constructed tensors

TEST(QuantTrainedWeights, DeadChannelWithABiasRaisesOnlyItsOwnScale) {
  // Channel 0 ordinary, channel 1 dead (|w| ~ 1e-15) with an ordinary bias, channel 2 ordinary.
  const Tensor w = floats({3, 2, 1, 1}, {0.5f, -0.25f, 1.1e-15f, -0.7e-15f, 0.03f, 0.02f});
  const std::vector<float> bias = {0.1f, 0.7f, -3.0f};
  const float s_in = 0.02f;
  const BiasFit fit{bias.data(), 3, s_in};
  const WeightChannelLayout layout = convWeightLayout(w.shape(), "w");
  const QuantizedWeights q = quantizeWeights(w, layout, WeightGranularity::PerChannel, "w", &fit);
  EXPECT_EQ(q.raised_channels, (std::vector<int64_t>{1}));
  EXPECT_FLOAT_EQ(q.scales[0], 0.5f / 127);
  EXPECT_FLOAT_EQ(q.scales[2], 0.03f / 127);
  EXPECT_EQ(q.values.data<int8_t>()[2], 0);  // the dead weights are 0 at the raised scale
  EXPECT_EQ(q.values.data<int8_t>()[3], 0);
  // Without the floor the bias would not fit int32; with it, it fits the accumulator headroom
  // and dequantizes back to the float bias.
  const std::vector<float> unfloored = quantizeWeights(w, layout, WeightGranularity::PerChannel, "w").scales;
  EXPECT_FALSE(quantizeBias(bias.data(), 3, s_in, unfloored, "b").saturated_channels.empty());
  const QuantizedBias qb = quantizeBias(bias.data(), 3, s_in, q.scales, "b");
  EXPECT_TRUE(qb.saturated_channels.empty());
  EXPECT_LE(std::llabs(qb.values[1]), biasHeadroom(0));
  EXPECT_NEAR(qb.values[1] * double{s_in} * q.scales[1], 0.7, 1e-6);
}

TEST(QuantTrainedWeights, PerTensorRaisesTheSharedScaleOnlyWhenNeeded) {
  const Tensor w = floats({2, 1, 1, 1}, {1e-12f, 2e-12f});
  const std::vector<float> bias = {5.0f, 0.0f};
  const BiasFit fit{bias.data(), 2, 0.05f};
  const QuantizedWeights q =
      quantizeWeights(w, convWeightLayout(w.shape(), "w"), WeightGranularity::PerTensor, "w", &fit);
  EXPECT_EQ(q.raised_channels, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(q.scales[0], q.scales[1]);
  EXPECT_TRUE(quantizeBias(bias.data(), 2, 0.05f, q.scales, "b").saturated_channels.empty());
  // An ordinary layer is untouched by the floor.
  const Tensor ordinary = randomTensor({4, 3, 3, 3}, 5, -0.5f, 0.5f);
  const std::vector<float> small_bias = {0.1f, -0.2f, 0.3f, 2.0f};
  const BiasFit small{small_bias.data(), 4, 0.05f};
  const WeightChannelLayout layout = convWeightLayout(ordinary.shape(), "o");
  for (WeightGranularity gr : {WeightGranularity::PerChannel, WeightGranularity::PerTensor}) {
    const QuantizedWeights with = quantizeWeights(ordinary, layout, gr, "o", &small);
    const QuantizedWeights without = quantizeWeights(ordinary, layout, gr, "o");
    EXPECT_TRUE(with.raised_channels.empty());
    EXPECT_EQ(with.scales, without.scales);
    EXPECT_TRUE(with.values.bitwiseEqual(without.values));
  }
}

TEST(QuantTrainedWeights, ChannelsSpanningTenDecadesKeepTheirOwnScales) {
  // Per-channel maxima from 1e-6 to 10: each channel is quantized on its own grid, to within half
  // of its own step, and its largest weight maps to +-127.
  std::vector<float> values;
  for (int c = 0; c < 8; ++c) {
    const float m = std::pow(10.0f, -6.0f + c);
    values.insert(values.end(), {m, -0.5f * m, 0.25f * m});
  }
  const Tensor w = floats({8, 3, 1, 1}, values);
  const QuantizedWeights q =
      quantizeWeights(w, convWeightLayout(w.shape(), "w"), WeightGranularity::PerChannel, "w");
  for (int c = 0; c < 8; ++c) {
    EXPECT_FLOAT_EQ(q.scales[static_cast<size_t>(c)], values[static_cast<size_t>(3 * c)] / 127);
    EXPECT_EQ(q.values.data<int8_t>()[3 * c], 127);
    for (int k = 0; k < 3; ++k) {
      const size_t i = static_cast<size_t>(3 * c + k);
      EXPECT_LE(std::fabs(q.values.data<int8_t>()[i] * q.scales[static_cast<size_t>(c)] - values[i]),
                0.5f * q.scales[static_cast<size_t>(c)] * 1.0001f);
    }
  }
  EXPECT_TRUE(q.borrowed_channels.empty());
}

TEST(QuantTrainedWeights, ChannelWhoseScaleWouldBeSubnormalBorrowsTheTensorScale) {
  const Tensor w = floats({2, 2, 1, 1}, {0.5f, 0.1f, 1e-40f, -1e-41f});
  const QuantizedWeights q =
      quantizeWeights(w, convWeightLayout(w.shape(), "w"), WeightGranularity::PerChannel, "w");
  EXPECT_EQ(q.borrowed_channels, (std::vector<int64_t>{1}));
  EXPECT_EQ(q.scales[1], q.scales[0]);
  EXPECT_TRUE(std::isfinite(q.scales[1]));
  EXPECT_EQ(q.values.data<int8_t>()[2], 0);
}

TEST(QuantTrainedWeights, AccumulatorCheckBoundsTheRealWeightsAndNamesTheCause) {
  // 192 or 25 products of int8 weights never overflow, whatever the reduction length says.
  std::vector<int8_t> w(192, 127);
  EXPECT_NO_THROW(checkAccumulatorBound(w.data(), 1, 192, {1000000}, "node 'c' (Conv)"));
  // A bias that bypassed the floor is named as the cause, not the reduction.
  try {
    checkAccumulatorBound(w.data(), 1, 192, {kInt32Max - 10}, "node 'c' (Conv)");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("output channel 0: int32 bias"), std::string::npos) << m;
    EXPECT_NE(m.find("bias floor"), std::string::npos) << m;
    EXPECT_EQ(m.find("split the layer"), std::string::npos) << m;
  }
  // A reduction really too deep for int32 at int8: the remedy is FP16 or a split reduction.
  std::vector<int8_t> deep(40000, 127);
  try {
    checkAccumulatorBound(deep.data(), 1, 40000, {0}, "node 'fc' (Gemm)");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node 'fc' (Gemm): output channel 0 adds 40000 int8 products"), std::string::npos) << m;
    EXPECT_NE(m.find("hybrid_layers"), std::string::npos) << m;
  }
  // The same reduction with trained-like small weights fits.
  std::vector<int8_t> small(40000, 3);
  EXPECT_NO_THROW(checkAccumulatorBound(small.data(), 1, 40000, {100}, "fc"));
}

// ---- whole graphs through the quantizer and both simulator paths

struct Built {
  QuantPlan plan;
  std::unique_ptr<QuantizedExecutor> fast, reference;
};

Built buildInt8(const Graph& g, const std::vector<Tensor>& samples, WeightGranularity gr = WeightGranularity::PerChannel) {
  Calibrator cal(g);
  for (const Tensor& s : samples) cal.addSample({s});
  Built b;
  QuantizerOptions options;
  options.granularity = gr;
  b.plan = buildQuantPlan(g, cal.ranges({}), options);
  b.fast = std::make_unique<QuantizedExecutor>(g, b.plan, SimOptions{SimMode::Int8, SimPath::Fast});
  b.reference = std::make_unique<QuantizedExecutor>(g, b.plan, SimOptions{SimMode::Int8, SimPath::Reference});
  return b;
}

// Max |int8 - float| over the output, in output quantization steps; also checks the two
// simulator paths agree to the bit.
double stepsFromFloat(const Graph& g, const Built& b, const Tensor& x) {
  const Tensor ref = evalGraph(g, {{g.inputs()[0]->name(), x}})[0];
  const Tensor fast = b.fast->run({x})[0];
  EXPECT_TRUE(fast.bitwiseEqual(b.reference->run({x})[0])) << "fast and reference paths differ";
  const float step = b.plan.at(g.outputs()[0]->name()).scales[0];
  double worst = 0.0;
  for (int64_t i = 0; i < ref.numel(); ++i)
    worst = std::max(worst, std::fabs(double{ref.data<float>()[i]} - fast.data<float>()[i]) / step);
  return worst;
}

std::vector<Tensor> samples(const Shape& shape, int n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::vector<Tensor> s;
  for (int i = 0; i < n; ++i) s.push_back(randomTensor(shape, seed + static_cast<uint32_t>(i), lo, hi));
  return s;
}

TEST(QuantTrainedWeights, ConvWithDeadChannelsAndLargeFoldedBiasesBuildsAndTracksFloat) {
  // The ppocrv4_det case: a 1x1 conv over 192 input channels whose output channel 5 is dead
  // (|w| ~ 1e-15) with a folded bias of 0.8, and channel 6 has a bias of 300 over tiny weights.
  GraphBuilder b;
  Value* x = b.input("x", {1, 192, 4, 4});
  Tensor w = randomTensor({8, 192, 1, 1}, 3, -0.1f, 0.1f);
  for (int64_t k = 0; k < 192; ++k) {
    w.data<float>()[5 * 192 + k] *= 1e-14f;
    w.data<float>()[6 * 192 + k] *= 1e-6f;
  }
  Tensor bias = randomTensor({8}, 4, -0.5f, 0.5f);
  bias.data<float>()[5] = 0.8f;
  bias.data<float>()[6] = 300.0f;
  Value* y = b.op("Conv", {x, b.constant(w, "w"), b.constant(bias, "b")}, {}, "conv");
  b.output(y);
  const std::vector<Tensor> s = samples({1, 192, 4, 4}, 4, 11);
  for (WeightGranularity gr : {WeightGranularity::PerChannel, WeightGranularity::PerTensor}) {
    const Built built = buildInt8(b.graph(), s, gr);
    if (gr == WeightGranularity::PerChannel) {
      EXPECT_TRUE(anyWarningHas(built.plan, "node 'conv': scale raised on 2 channel(s) (5, 6)"));
    }
    EXPECT_LE(stepsFromFloat(b.graph(), built, s[1]), 2.0);
  }
}

TEST(QuantTrainedWeights, BatchNormWithZeroGammaAndZeroVarianceFoldsAndBuilds) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 6, 6});
  Value* c = b.op("Conv", {x, b.randomConstant({6, 4, 3, 3}, 7, -0.3f, 0.3f)},
                  attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* gamma = b.constant(floats({6}, {1.0f, 0.0f, 1e-20f, 2.0f, 0.5f, 0.0f}));
  Value* beta = b.constant(floats({6}, {0.1f, 0.7f, -0.4f, 0.0f, 0.2f, 0.0f}));
  Value* mean = b.constant(floats({6}, {0.0f, 0.3f, 0.1f, -0.2f, 0.0f, 0.0f}));
  Value* var = b.constant(floats({6}, {1.0f, 0.0f, 1e-30f, 0.5f, 0.0f, 2.0f}));
  Value* bn = b.op("BatchNormalization", {c, gamma, beta, mean, var}, attrs({{"epsilon", 1e-5f}}));
  b.output(b.op("Relu", {bn}));
  Graph& g = b.graph();
  const std::vector<Tensor> s = samples({1, 4, 6, 6}, 4, 21);
  const Tensor before = evalGraph(g, {{"x", s[2]}})[0];
  optimize(g);
  ASSERT_EQ(passtest::countOps(g, "BatchNormalization"), 0u) << "the BatchNorm did not fold";
  const Tensor after = evalGraph(g, {{"x", s[2]}})[0];
  for (int64_t i = 0; i < before.numel(); ++i)
    ASSERT_NEAR(before.data<float>()[i], after.data<float>()[i], 1e-4f * (1 + std::fabs(before.data<float>()[i])));
  const Built built = buildInt8(g, s);
  EXPECT_LE(stepsFromFloat(g, built, s[2]), 2.0);
}

TEST(QuantTrainedWeights, ConstantActivationHasADegenerateRangeAndStillBuilds) {
  // x * 0 feeds a conv: the calibrated range is [0, 0] (zero width).
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 5, 5});
  Value* zero = b.op("Mul", {x, b.constant(floats({1}, {0.0f}))});
  Value* y = b.op("Conv", {zero, b.randomConstant({4, 3, 1, 1}, 8), b.randomConstant({4}, 9)});
  b.output(y);
  const std::vector<Tensor> s = samples({1, 3, 5, 5}, 3, 31);
  const Built built = buildInt8(b.graph(), s);
  const TensorQuant& z = built.plan.at(zero->name());
  EXPECT_GT(z.scales[0], 0.0f);
  EXPECT_LE(stepsFromFloat(b.graph(), built, s[0]), 1.0);  // the output is the bias alone
}

TEST(QuantTrainedWeights, OneSidedActivationsPutTheZeroPointOnTheRail) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 5, 5});
  Value* c = b.op("Conv", {x, b.randomConstant({4, 4, 3, 3}, 12, -0.4f, 0.4f), b.randomConstant({4}, 13)},
                  attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* sig = b.op("Sigmoid", {c});
  Value* y = b.op("Conv", {sig, b.randomConstant({2, 4, 1, 1}, 14), b.randomConstant({2}, 15)});
  b.output(y);
  const std::vector<Tensor> s = samples({1, 4, 5, 5}, 4, 41);
  const Built built = buildInt8(b.graph(), s);
  EXPECT_EQ(built.plan.at(sig->name()).zero_points[0], -128);  // [0, max]: real 0 is q = -128
  EXPECT_LE(stepsFromFloat(b.graph(), built, s[1]), 2.0);
}

TEST(QuantTrainedWeights, WeightOutlierIsReportedAndTheLayerStillBuilds) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 16});
  Tensor w = randomTensor({16, 8}, 16, -0.05f, 0.05f);
  w.data<float>()[3] = 40.0f;  // one weight ~1000x its neighbours
  b.output(b.op("Gemm", {x, b.constant(w, "fc.w"), b.randomConstant({8}, 17)}, {}, "fc"));
  const std::vector<Tensor> s = samples({1, 16}, 6, 51);
  const Built built = buildInt8(b.graph(), s);
  EXPECT_TRUE(anyWarningHas(built.plan, "weight 'fc.w' of node 'fc' has outliers"));
  EXPECT_LE(stepsFromFloat(b.graph(), built, s[2]), 2.0);
}

}  // namespace
}  // namespace npuc::quant
