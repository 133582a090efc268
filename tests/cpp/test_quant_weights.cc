// Weight and bias quantization: output-channel layouts of Conv / ConvTranspose (groups) /
// Gemm / MatMul, per-channel and per-tensor scales, bias at s_in * s_w[c] with saturation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "quant/weight_quant.h"

namespace npuc::quant {
namespace {

Tensor randomWeights(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.1f);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Checks the invariants of a quantization: |q| <= 127, every channel's largest weight maps to
// +-127 (per-channel), and dequantization error is at most half a step.
void expectFaithful(const Tensor& w, const QuantizedWeights& q, const WeightChannelLayout& layout) {
  const float* x = w.data<float>();
  const int8_t* v = q.values.data<int8_t>();
  std::vector<int> channel_peak(q.scales.size(), 0);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const size_t c = static_cast<size_t>(layout.channelOf(i));
    ASSERT_LE(std::abs(v[i]), 127);
    ASSERT_LE(std::fabs(v[i] * q.scales[c] - x[i]), 0.5f * q.scales[c] * (1 + 1e-5f)) << i;
    channel_peak[c] = std::max(channel_peak[c], std::abs(static_cast<int>(v[i])));
  }
  if (q.granularity == WeightGranularity::PerChannel) {
    for (int peak : channel_peak) EXPECT_EQ(peak, 127);
  }
}

TEST(QuantWeights, ConvPerChannelAndPerTensor) {
  const Tensor w = randomWeights({8, 3, 3, 3}, 1);
  const WeightChannelLayout layout = convWeightLayout(w.shape(), "conv1.weight");
  EXPECT_EQ(layout.numChannels(), 8);
  EXPECT_EQ(layout.channelOf(27), 1);
  EXPECT_EQ(layout.channelOf(8 * 27 - 1), 7);
  const QuantizedWeights pc = quantizeWeights(w, layout, WeightGranularity::PerChannel, "conv1.weight");
  expectFaithful(w, pc, layout);
  const QuantizedWeights pt = quantizeWeights(w, layout, WeightGranularity::PerTensor, "conv1.weight");
  expectFaithful(w, pt, layout);
  for (float s : pt.scales) EXPECT_EQ(s, pt.scales[0]);
  float max_abs = 0;
  for (int64_t i = 0; i < w.numel(); ++i) max_abs = std::max(max_abs, std::fabs(w.data<float>()[i]));
  EXPECT_FLOAT_EQ(pt.scales[0], max_abs / 127.0f);
}

TEST(QuantWeights, ConvTransposeChannelAxisCombinesWithGroups) {
  // [Cin = 4, Cout/g = 3, 1, 2] with group = 2: output channel of (ci, j) is (ci / 2) * 3 + j.
  const Shape shape = {4, 3, 1, 2};
  Tensor w(DType::Float32, shape);
  const WeightChannelLayout layout = convTransposeWeightLayout(shape, 2, "deconv.weight");
  EXPECT_EQ(layout.numChannels(), 6);
  for (int64_t ci = 0; ci < 4; ++ci)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) {
        const int64_t flat = (ci * 3 + j) * 2 + k;
        const int64_t expected = (ci / 2) * 3 + j;
        ASSERT_EQ(layout.channelOf(flat), expected) << ci << "," << j << "," << k;
        // Channel c's weights have magnitude up to (c + 1); sign and position vary.
        w.data<float>()[flat] =
            static_cast<float>(expected + 1) * (k ? -1.0f : 0.5f) * (ci % 2 ? 1.0f : 0.9f);
      }
  const QuantizedWeights q = quantizeWeights(w, layout, WeightGranularity::PerChannel, "deconv.weight");
  for (int64_t c = 0; c < 6; ++c) EXPECT_FLOAT_EQ(q.scales[c], static_cast<float>(c + 1) / 127.0f) << c;
  expectFaithful(w, q, layout);
  EXPECT_THROW(convTransposeWeightLayout({3, 3, 1, 1}, 2, "bad"), ShapeError);
}

TEST(QuantWeights, GemmAndMatMulChannelAxes) {
  // Gemm transB = 0: B [K = 5, N = 4], channel = column.
  const WeightChannelLayout kn = gemmWeightLayout({5, 4}, false, "fc.weight");
  EXPECT_EQ(kn.numChannels(), 4);
  EXPECT_EQ(kn.channelOf(4 * 3 + 2), 2);
  // transB = 1: B [N = 4, K = 5], channel = row.
  const WeightChannelLayout nk = gemmWeightLayout({4, 5}, true, "fc.weight");
  EXPECT_EQ(nk.numChannels(), 4);
  EXPECT_EQ(nk.channelOf(3 * 5 + 4), 3);
  // MatMul B [2, 5, 4] (batched): channel = last axis.
  const WeightChannelLayout mm = matmulWeightLayout({2, 5, 4}, "proj");
  EXPECT_EQ(mm.numChannels(), 4);
  EXPECT_EQ(mm.channelOf(20 + 4 * 2 + 1), 1);
  EXPECT_EQ(matmulWeightLayout({7}, "vec").numChannels(), 1);
  for (const auto& [shape, layout] : {std::make_pair(Shape{5, 4}, kn), std::make_pair(Shape{4, 5}, nk),
                                      std::make_pair(Shape{2, 5, 4}, mm)}) {
    const Tensor w = randomWeights(shape, 3);
    expectFaithful(w, quantizeWeights(w, layout, WeightGranularity::PerChannel, "w"), layout);
  }
  EXPECT_THROW(gemmWeightLayout({2, 3, 4}, false, "fc"), ShapeError);
  EXPECT_THROW(convWeightLayout({8, 3}, "conv"), ShapeError);
}

TEST(QuantWeights, DeadChannelBorrowsTensorScaleAndAllZeroIsSafe) {
  Tensor w = randomWeights({3, 2, 1, 1}, 4);
  w.data<float>()[2] = 0.0f;  // channel 1 is all zero
  w.data<float>()[3] = 0.0f;
  const WeightChannelLayout layout = convWeightLayout(w.shape(), "w");
  const QuantizedWeights q = quantizeWeights(w, layout, WeightGranularity::PerChannel, "w");
  const QuantizedWeights t = quantizeWeights(w, layout, WeightGranularity::PerTensor, "w");
  EXPECT_EQ(q.scales[1], t.scales[0]);
  EXPECT_GT(q.scales[1], 0.0f);
  const Tensor zeros(DType::Float32, {2, 1, 1, 1});
  const QuantizedWeights z =
      quantizeWeights(zeros, convWeightLayout(zeros.shape(), "z"), WeightGranularity::PerChannel, "z");
  EXPECT_EQ(z.scales, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(z.values.data<int8_t>()[0], 0);
  EXPECT_THROW(quantizeWeights(Tensor(DType::Int8, {2, 1, 1, 1}), convWeightLayout({2, 1, 1, 1}, "i"),
                               WeightGranularity::PerChannel, "i"),
               Error);
}

TEST(QuantWeights, BiasAtInputTimesWeightScaleWithSaturationReport) {
  const std::vector<float> weight_scales = {0.5f, 0.25f, 1e-12f};
  const std::vector<float> bias = {1.25f, -0.375f, 1.0f};
  const QuantizedBias q = quantizeBias(bias.data(), 3, 0.5f, weight_scales, "conv.bias");
  EXPECT_EQ(q.values[0], 5);   // 1.25 / 0.25
  EXPECT_EQ(q.values[1], -3);  // -0.375 / 0.125
  EXPECT_EQ(q.values[2], 2147483647);
  EXPECT_EQ(q.saturated_channels, (std::vector<int64_t>{2}));
  // Ties round half away from zero, both signs.
  const std::vector<float> ties = {2.5f, -2.5f};
  const QuantizedBias t = quantizeBias(ties.data(), 2, 1.0f, {1.0f, 1.0f}, "b");
  EXPECT_EQ(t.values, (std::vector<int32_t>{3, -3}));
  EXPECT_TRUE(t.saturated_channels.empty());
  EXPECT_THROW(quantizeBias(ties.data(), 2, 1.0f, {1.0f}, "b"), ShapeError);
  EXPECT_EQ(weightGranularityFromName("layer"), WeightGranularity::PerTensor);
  EXPECT_THROW(weightGranularityFromName("tensor"), ConfigError);
}

}  // namespace
}  // namespace npuc::quant
