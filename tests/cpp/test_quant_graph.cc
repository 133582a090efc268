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

// One zero vector as the bias of two Gemms (different input scales, so different int32 bias
// scales) and as an Add operand (per-tensor int8): how CSE leaves a zero-initialized LayerNorm
// bias and Linear biases. Each role gets its own constant, the FP32 result is unchanged, and a
// plan built without separating names the constant.
TEST(QuantGraphQuantizer, SharedParametersAreSeparatedPerRole) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 8});
  Value* zeros = b.constant(Tensor(DType::Float32, Shape{8}), "zeros");
  Value* h = b.op("Gemm", {x, b.randomConstant({8, 8}, 1), zeros});
  Value* g = b.op("Gemm", {b.op("Relu", {h}), b.randomConstant({8, 8}, 2), zeros});
  b.output(b.op("Add", {g, zeros}));
  auto ranges = calibrate(b.graph());
  try {
    buildQuantPlan(b.graph(), ranges, {});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'zeros'"), std::string::npos) << e.what();
  }
  auto original = b.graph().clone();
  EXPECT_EQ(separateSharedParameters(b.graph()), 2u) << "both Gemm biases get copies; the Add keeps it";
  EXPECT_EQ(zeros->uses().size(), 1u);
  passtest::expectSameResults(*original, b.graph(), 0.0);
  const QuantPlan plan = buildQuantPlan(b.graph(), ranges, {});
  const Node* second = b.graph().outputs()[0]->producer()->input(0)->producer();
  ASSERT_EQ(second->opType(), "Gemm");
  EXPECT_EQ(plan.at(second->input(2)->name()).dtype, QuantDType::Int32);
  EXPECT_TRUE(plan.at("zeros").isPerTensor());
  EXPECT_EQ(separateSharedParameters(b.graph()), 0u) << "idempotent";
}

}  // namespace
}  // namespace npuc::quant
