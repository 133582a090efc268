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
  const std::string v2 = encodeQuantPlan(plan);  // codec 3: codec 2's layout plus the fields below
  // Three entries each gain a flag byte; the two per-channel ones drop a count and 3 zero points,
  // the per-tensor x (zero point -3) keeps its count and zero point. Codec 3 adds the scheme (9
  // bytes), a grouping flag and a given-values flag per entry (3 + 3).
  EXPECT_EQ(v1.size() - v2.size(), 2 * (4 + 3 * 4) - 3 - 9 - 3 - 3);
  EXPECT_EQ(decodeQuantPlan(v1).summary(), plan.summary());
  EXPECT_EQ(decodeQuantPlan(v1).tensors.at("conv.bias").zero_points, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(decodeQuantPlan(v2).tensors.at("conv.weight").zero_points, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(decodeQuantPlan(v2).tensors.at("x").zero_points, std::vector<int32_t>{-3});
  std::string bad_flag = v2;
  const size_t first_flag = 4 + 1 + 9 + 4 + (4 + 9) + 1 + 8 + 4 + 3 * 4;  // "conv.bias" sorts first
  ASSERT_EQ(bad_flag[first_flag], 1);
  bad_flag[first_flag] = 7;
  try {
    decodeQuantPlan(bad_flag);
    FAIL() << "zero point encoding 7 accepted";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("zero point encoding 7"), std::string::npos) << e.what();
  }
}

// A w4a16 plan: int16 activations, int4 grouped weights (multipliers in [1, 255]), int64 biases.
QuantPlan groupedPlan() {
  QuantPlan plan;
  plan.scheme = QuantScheme::of(SchemeDType::W4A16, 32);
  plan.tensors["x"] = TensorQuant{{0.0004f}, {-12}, -1, QuantDType::Int16};
  TensorQuant w{{0.1f, 0.2f}, {0, 0}, 0, QuantDType::Int4};
  w.group_size = 32;
  w.group_multipliers = {1, 255, 3, 7, 1, 1};  // 2 channels x 3 groups
  plan.tensors["fc.weight"] = w;
  plan.tensors["fc.bias"] = TensorQuant{{4e-5f, 8e-5f}, {0, 0}, 0, QuantDType::Int64};
  plan.nodes["fc"] = NodePrecision::Int8;
  return plan;
}

TEST(QuantPlanCodec, Version3KeepsTheSchemeAndTheWeightGroups) {
  const QuantPlan plan = groupedPlan();
  const std::string bytes = encodeQuantPlan(plan);
  const QuantPlan back = decodeQuantPlan(bytes);
  EXPECT_EQ(back.scheme, plan.scheme);
  EXPECT_EQ(back.scheme.weight_bits, 4);
  EXPECT_EQ(back.scheme.activation_bits, 16);
  EXPECT_EQ(back.tensors.at("x").dtype, QuantDType::Int16);
  EXPECT_EQ(back.tensors.at("fc.bias").dtype, QuantDType::Int64);
  const TensorQuant& w = back.tensors.at("fc.weight");
  EXPECT_EQ(w.dtype, QuantDType::Int4);
  EXPECT_EQ(w.group_size, 32);
  EXPECT_EQ(w.group_multipliers, plan.tensors.at("fc.weight").group_multipliers);
  EXPECT_EQ(encodeQuantPlan(back), bytes);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decodeQuantPlan(bytes.substr(0, n)), BlobError) << "prefix of " << n << " bytes";
  // Every scheme survives, and a w8a8 plan decodes to the default scheme.
  for (SchemeDType t : {SchemeDType::W8A16, SchemeDType::W16A16I, SchemeDType::W16A16IDfp}) {
    QuantPlan p = samplePlan();
    p.scheme = QuantScheme::of(t);
    EXPECT_EQ(decodeQuantPlan(encodeQuantPlan(p)).scheme.dtype, t);
  }
  EXPECT_EQ(decodeQuantPlan(encodeQuantPlan(samplePlan())).scheme, QuantScheme{});
}

// Codec 2 (blob format 2.0): codec 1 with the zero-point flag, no scheme, no grouping flag.
std::string encodeVersion2(const QuantPlan& plan) {
  blob::ByteWriter w;
  w.u32(2);
  w.u8(plan.weight_granularity == WeightGranularity::PerChannel ? 1 : 0);
  w.u32(static_cast<uint32_t>(plan.tensors.size()));
  for (const auto& [name, q] : plan.tensors) {
    w.str(name, 1 << 16, "name");
    w.u8(static_cast<uint8_t>(q.dtype));
    w.i64(q.axis);
    w.u32(static_cast<uint32_t>(q.scales.size()));
    for (float s : q.scales) w.f32(s);
    w.u8(0);  // zero points stored
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

// Blobs of format 2.0 keep loading: their plans are w8a8 with ungrouped entries.
TEST(QuantPlanCodec, Version2ReadsAsW8a8) {
  QuantPlan plan = samplePlan();
  const QuantPlan back = decodeQuantPlan(encodeVersion2(plan));
  EXPECT_EQ(back.scheme, QuantScheme{});
  EXPECT_EQ(back.scheme.activation_bits, 8);
  EXPECT_EQ(back.summary(), plan.summary());
  EXPECT_EQ(back.tensors.at("conv.weight").group_size, 0);
  EXPECT_EQ(encodeQuantPlan(back), encodeQuantPlan(plan));
  // The new dtype codes are codec 3's: a codec-2 payload carrying one is refused.
  plan.tensors["x"].dtype = QuantDType::Int16;
  EXPECT_THROW(decodeQuantPlan(encodeVersion2(plan)), BlobError);
}

TEST(QuantPlanCodec, BadSchemeAndGroupFieldsAreNamed) {
  auto expectNamed = [](const std::string& bytes, const std::string& needle) {
    try {
      decodeQuantPlan(bytes, 100);
      FAIL() << needle << " accepted";
    } catch (const BlobError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string good = encodeQuantPlan(groupedPlan());
  std::string bad_scheme = good;
  bad_scheme[5] = 9;  // after version (4) and granularity (1)
  expectNamed(bad_scheme, "scheme) code 9");
  std::string bad_group = good;
  bad_group[6] = 48;  // group48 is not an RKNN quantized_method
  expectNamed(bad_group, "group of 48");
  QuantPlan zero_mult = groupedPlan();
  zero_mult.tensors["fc.weight"].group_multipliers[1] = 0;
  EXPECT_THROW(encodeQuantPlan(zero_mult), ConfigError);
  // Multipliers must be whole groups per channel: 5 for 2 channels is refused.
  QuantPlan odd = groupedPlan();
  odd.tensors["fc.weight"].group_multipliers.pop_back();
  expectNamed(encodeQuantPlan(odd), "5 group multipliers for 2 channels");
  // A new dtype code in a codec-1 payload is refused.
  QuantPlan int16 = samplePlan();
  int16.tensors["x"].dtype = QuantDType::Int16;
  expectNamed(encodeVersion1(int16), "unknown quantized dtype code 3");
}

}  // namespace
}  // namespace npuc::quant
