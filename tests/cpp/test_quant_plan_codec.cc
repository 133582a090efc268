// The QUNT payload: a QuantPlan survives encode/decode exactly, and malformed bytes are refused.
#include <gtest/gtest.h>

#include "blob/byte_io.h"
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

// Codec 1 (blob format 1.2): every zero point stored after its count, no encoding flag.
std::string encodeVersion1(const QuantPlan& plan) {
  blob::ByteWriter w;
  w.u32(1);
  w.u8(plan.weight_granularity == WeightGranularity::PerChannel ? 1 : 0);
  w.u32(static_cast<uint32_t>(plan.tensors.size()));
  for (const auto& [name, q] : plan.tensors) {
    w.str(name, 1 << 16, "name");
    w.u8(static_cast<uint8_t>(q.dtype));
    w.i64(q.axis);
    w.u32(static_cast<uint32_t>(q.scales.size()));
    for (float s : q.scales) w.f32(s);
    w.u32(static_cast<uint32_t>(q.zero_points.size()));
    for (int32_t z : q.zero_points) w.i32(z);
  }
  w.u32(static_cast<uint32_t>(plan.nodes.size()));
  for (const auto& [name, p] : plan.nodes) {
    w.str(name, 1 << 16, "name");
    w.u8(p == NodePrecision::Int8 ? 0 : 1);
  }
  return w.take();
}

// Symmetric entries (all weights and biases) store a one-byte flag instead of their zero points,
// which were half of QUNT in 1.2 blobs; the 1.2 payload still reads to the same plan.
TEST(QuantPlanCodec, AllZeroZeroPointsAreAFlagAndVersion1StillReads) {
  const QuantPlan plan = samplePlan();
  const std::string v1 = encodeVersion1(plan);
  const std::string v2 = encodeQuantPlan(plan);
  // Three entries each gain a flag byte; the two per-channel ones drop a count and 3 zero points,
  // the per-tensor x (zero point -3) keeps its count and zero point.
  EXPECT_EQ(v1.size() - v2.size(), 2 * (4 + 3 * 4) - 3);
  EXPECT_EQ(decodeQuantPlan(v1).summary(), plan.summary());
  EXPECT_EQ(decodeQuantPlan(v1).tensors.at("conv.bias").zero_points, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(decodeQuantPlan(v2).tensors.at("conv.weight").zero_points, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(decodeQuantPlan(v2).tensors.at("x").zero_points, std::vector<int32_t>{-3});
  std::string bad_flag = v2;
  const size_t first_flag = 4 + 1 + 4 + (4 + 9) + 1 + 8 + 4 + 3 * 4;  // "conv.bias" sorts first
  ASSERT_EQ(bad_flag[first_flag], 1);
  bad_flag[first_flag] = 7;
  try {
    decodeQuantPlan(bad_flag);
    FAIL() << "zero point encoding 7 accepted";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("zero point encoding 7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npuc::quant
