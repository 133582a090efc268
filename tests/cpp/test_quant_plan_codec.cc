// The QUNT payload: a QuantPlan survives encode/decode exactly, and malformed bytes are refused.
#include <gtest/gtest.h>

#include "common/error.h"
#include "quant/graph/quant_plan_codec.h"

namespace npuc::quant {
namespace {

QuantPlan samplePlan() {
  QuantPlan plan;
  plan.weight_granularity = WeightGranularity::PerChannel;
  plan.tensors["x"] = TensorQuant{{0.02f}, {-3}, -1, QuantDType::Int8};
  plan.tensors["conv.weight"] = TensorQuant{{0.1f, 0.2f, 0.05f}, {0, 0, 0}, 0, QuantDType::Int8};
  plan.tensors["conv.bias"] = TensorQuant{{0.002f, 0.004f, 0.001f}, {0, 0, 0}, 0, QuantDType::Int32};
  plan.nodes["conv"] = NodePrecision::Int8;
  plan.nodes["softmax"] = NodePrecision::Float16;
  return plan;
}

TEST(QuantPlanCodec, RoundTripIsExactAndDeterministic) {
  const QuantPlan plan = samplePlan();
  const std::string bytes = encodeQuantPlan(plan);
  EXPECT_EQ(bytes, encodeQuantPlan(plan));
  const QuantPlan back = decodeQuantPlan(bytes);
  EXPECT_EQ(back.summary(), plan.summary());
  EXPECT_EQ(back.tensors.at("conv.weight").scales, plan.tensors.at("conv.weight").scales);
  EXPECT_EQ(back.tensors.at("x").zero_points, plan.tensors.at("x").zero_points);
  EXPECT_EQ(back.precisionOf("softmax"), NodePrecision::Float16);
  EXPECT_EQ(encodeQuantPlan(back), bytes);
}

TEST(QuantPlanCodec, EveryTruncationIsRefused) {
  const std::string bytes = encodeQuantPlan(samplePlan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(decodeQuantPlan(bytes.substr(0, n)), BlobError) << "prefix of " << n << " bytes";
  }
  EXPECT_THROW(decodeQuantPlan(bytes + "x"), BlobError);
}

TEST(QuantPlanCodec, BadFieldsAreNamed) {
  std::string bytes = encodeQuantPlan(samplePlan());
  std::string wrong_version = bytes;
  wrong_version[0] = 9;
  try {
    decodeQuantPlan(wrong_version);
    FAIL() << "version 9 accepted";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("version 9"), std::string::npos) << e.what();
  }
  QuantPlan negative = samplePlan();
  negative.tensors["x"].scales = {-1.0f};
  EXPECT_THROW(decodeQuantPlan(encodeQuantPlan(negative)), BlobError);
  QuantPlan mismatched = samplePlan();
  mismatched.tensors["x"].zero_points = {1, 2};
  EXPECT_THROW(decodeQuantPlan(encodeQuantPlan(mismatched)), BlobError);
}

}  // namespace
}  // namespace npuc::quant
