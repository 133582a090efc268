// Graph-level quantization: the streaming calibrator and the QuantPlan the quantizer derives
// (weights per channel / per tensor, int32 bias scales, outlier warnings, shared scales).
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

TEST(QuantGraphCalibrator, StreamsEveryActivationAndKeepsOnlyHistograms) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Value* r = b.op("Relu", {x});
  b.output(b.op("Reshape", {r, b.int64s({1, 32})}));
  Calibrator cal(b.graph());
  EXPECT_THROW(cal.ranges({}), ConfigError);
  for (uint32_t s = 0; s < 5; ++s) cal.addSample({randomTensor({1, 2, 4, 4}, s, -3.0f, 3.0f)});
  const size_t tensors = cal.histograms().size();
  EXPECT_EQ(tensors, 3u);  // x, the Relu output, the Reshape output
  for (uint32_t s = 5; s < 20; ++s) cal.addSample({randomTensor({1, 2, 4, 4}, s, -3.0f, 3.0f)});
  EXPECT_EQ(cal.histograms().size(), tensors) << "statistics must not grow with the sample count";
  EXPECT_EQ(cal.numSamples(), 20);
  EXPECT_EQ(cal.histograms().at("x").count(), 20u * 32u);
  const auto ranges = cal.ranges({});
  EXPECT_EQ(ranges.at(r->name()).min, 0.0f);
  EXPECT_GT(ranges.at(r->name()).max, 2.5f);
}

struct ConvModel {
  std::unique_ptr<Graph> graph;
  Value* weight;
  Value* bias;
};

ConvModel convModel(Tensor weight) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 5, 5});
  Value* w = b.constant(std::move(weight), "w");
  Value* bias = b.constant(randomTensor({3}, 9), "b");
  b.output(b.op("Conv", {x, w, bias}, {}, "conv"));
  ConvModel m{nullptr, w, bias};
  m.graph = b.release();
  return m;
}

std::map<std::string, ClipRange> calibrate(const Graph& g) {
  Calibrator cal(g);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor(g.inputs()[0]->shape(), s)});
  return cal.ranges({});
}

TEST(QuantGraphQuantizer, WeightScalesPerChannelOrPerTensorAndBiasAtInputTimesWeightScale) {
  Tensor w = randomTensor({3, 2, 3, 3}, 3);
  for (int64_t i = 0; i < 18; ++i) w.data<float>()[i] *= 4.0f;  // channel 0 four times wider
  ConvModel m = convModel(w);
  const auto ranges = calibrate(*m.graph);
  QuantizerOptions per_channel;
  const QuantPlan pc = buildQuantPlan(*m.graph, ranges, per_channel);
  const TensorQuant& wq = pc.at("w");
  ASSERT_EQ(wq.scales.size(), 3u);
  EXPECT_EQ(wq.axis, 0);
  EXPECT_GT(wq.scales[0], 2.0f * wq.scales[1]);
  const float s_x = pc.at("x").scales[0];
  const TensorQuant& bq = pc.at("b");
  EXPECT_EQ(bq.dtype, QuantDType::Int32);
  for (size_t c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(bq.scales[c], s_x * wq.scales[c]);
  EXPECT_EQ(pc.precisionOf("conv"), NodePrecision::Int8);

  QuantizerOptions per_tensor;
  per_tensor.granularity = WeightGranularity::PerTensor;
  const QuantPlan pt = buildQuantPlan(*m.graph, ranges, per_tensor);
  const std::vector<float>& s = pt.at("w").scales;
  EXPECT_EQ(s[0], s[1]);
  EXPECT_EQ(s[1], s[2]);
}

TEST(QuantGraphQuantizer, WeightOutlierBecomesAWarningNamingTheTensor) {
  Tensor w = randomTensor({3, 2, 3, 3}, 4);
  w.data<float>()[7] = 50.0f;
  ConvModel m = convModel(w);
  const QuantPlan plan = buildQuantPlan(*m.graph, calibrate(*m.graph), {});
  ASSERT_EQ(plan.weight_outliers.size(), 1u);
  EXPECT_TRUE(plan.weight_outliers[0].flagged);
  ASSERT_FALSE(plan.warnings.empty());
  EXPECT_NE(plan.warnings[0].find("'w'"), std::string::npos) << plan.warnings[0];
}

TEST(QuantGraphQuantizer, MissingRangeIsAConfigErrorNamingTheValue) {
  ConvModel m = convModel(randomTensor({3, 2, 3, 3}, 5));
  auto ranges = calibrate(*m.graph);
  const std::string out = m.graph->outputs()[0]->name();
  ranges.erase(out);
  try {
    buildQuantPlan(*m.graph, ranges, {});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(out), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npuc::quant
