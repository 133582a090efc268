// Bias integers an imported QDQ file fixed (TensorQuant::given_values): the QUNT codec keeps them,
// the simulator accumulates them as they are (a float bias near 2^31 cannot hold them), and the
// quantizer takes them only when the plan's bias scale is the file's.
#include <gtest/gtest.h>

#include "common/error.h"
#include "pass_test_util.h"
#include "quant/graph/given_params.h"
#include "quant/graph/quant_plan_codec.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;

QuantPlan planWithGivenBias() {
  QuantPlan plan;
  plan.tensors["w"] = TensorQuant{{0.5f, 0.25f}, {0, 0}, 0, QuantDType::Int8};
  TensorQuant b{{0.01f, 0.005f}, {0, 0}, 0, QuantDType::Int32};
  b.given_values = {2147483000, -2147483001};
  plan.tensors["b"] = b;
  return plan;
}

TEST(GivenBias, CodecKeepsTheIntegers) {
  const QuantPlan plan = planWithGivenBias();
  const std::string bytes = encodeQuantPlan(plan);
  const QuantPlan back = decodeQuantPlan(bytes);
  EXPECT_EQ(back.at("b").given_values, plan.at("b").given_values);
  EXPECT_TRUE(back.at("w").given_values.empty());
  EXPECT_EQ(encodeQuantPlan(back), bytes);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_THROW(decodeQuantPlan(bytes.substr(0, n)), BlobError) << n;
}

TEST(GivenBias, MalformedGivenValuesAreRefusedNamingTheField) {
  // One entry, no nodes: the payload ends with the given-values flag, u32 count, 2 x i64 and the
  // u32 node count.
  QuantPlan only_b;
  only_b.tensors["b"] = planWithGivenBias().tensors.at("b");
  const std::string bytes = encodeQuantPlan(only_b);
  const size_t count_at = bytes.size() - 4 - 16 - 4;
  ASSERT_EQ(static_cast<uint8_t>(bytes[count_at - 1]), 1u);  // the flag
  ASSERT_EQ(static_cast<uint8_t>(bytes[count_at]), 2u);
  std::string wrong_count = bytes;
  wrong_count[count_at] = 3;
  try {
    decodeQuantPlan(wrong_count);
    FAIL() << "3 given values for 2 scales accepted";
  } catch (const BlobError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("given values"), std::string::npos) << m;
    EXPECT_NE(m.find("offset"), std::string::npos) << m;
  }
  std::string wrong_flag = bytes;
  wrong_flag[count_at - 1] = 7;
  try {
    decodeQuantPlan(wrong_flag);
    FAIL() << "given values flag 7 accepted";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("given values flag 7"), std::string::npos) << e.what();
  }
}

// x (1 x 1 x 1 x 1) -> Conv 1x1 (w = 10, bias) -> y, all scales 1 but the output's 2^24: the
// output is round(acc / 2^24). The file's bias puts acc one above a tie (119.5 * 2^24 + 1 -> 120);
// its float constant (what the import keeps) is 99 below that integer, the float grid being 128
// wide there, so requantizing the float gives 128 less and acc falls below the tie (-> 119).
TEST(GivenBias, ConvAccumulatesTheFileIntegersNearTwoToThe31) {
  constexpr int64_t kTie = int64_t{119} * (1 << 24) + (1 << 23);
  constexpr int64_t kProduct = 10 * 10;
  constexpr int64_t kFileBias = kTie + 1 - kProduct;
  const float float_bias = static_cast<float>(kFileBias);
  ASSERT_EQ(static_cast<int64_t>(float_bias), kTie - 128);  // the float32 constant lost 29 units

  GraphBuilder gb;
  Value* x = gb.input("x", {1, 1, 1, 1});
  Value* y = gb.op("Conv",
                   {x, gb.constant(Tensor::fromVector(std::vector<float>{10.0f}, {1, 1, 1, 1}), "w"),
                    gb.constant(Tensor::fromVector(std::vector<float>{float_bias}, {1}), "b")},
                   attrs({{"kernel_shape", std::vector<int64_t>{1, 1}}}), "conv");
  gb.output(y);
  std::unique_ptr<Graph> g = gb.release();

  QuantPlan plan;
  plan.tensors["x"] = TensorQuant::perTensor({1.0f, 0});
  plan.tensors[y->name()] = TensorQuant::perTensor({static_cast<float>(1 << 24), 0});
  plan.tensors["w"] = TensorQuant{{1.0f}, {0}, 0, QuantDType::Int8};
  plan.tensors["b"] = TensorQuant{{1.0f}, {0}, 0, QuantDType::Int32};
  plan.nodes["conv"] = NodePrecision::Int8;
  const Node& conv = *y->producer();
  const Tensor input = Tensor::fromVector(std::vector<float>{10.0f}, {1, 1, 1, 1});

  EXPECT_EQ(nodeBiasIntegers(conv, plan, 1.0f, {1.0f}), std::vector<int64_t>{kTie - 128});
  EXPECT_EQ(QuantizedExecutor(*g, plan).run({input})[0].data<float>()[0], 119.0f * (1 << 24));

  plan.tensors["b"].given_values = {kFileBias};
  EXPECT_EQ(nodeBiasIntegers(conv, plan, 1.0f, {1.0f}), std::vector<int64_t>{kFileBias});
  EXPECT_EQ(QuantizedExecutor(*g, plan).run({input})[0].data<float>()[0], 120.0f * (1 << 24));
}

TEST(GivenBias, QuantizerTakesTheIntegersOnlyAtTheFilesScale) {
  QuantizerOptions opts;
  TensorQuant file{{0.01f, 0.02f}, {0, 0}, 0, QuantDType::Int32};
  file.given_values = {5, -7};
  opts.given["b"] = file;
  std::vector<std::string> warnings;
  EXPECT_EQ(givenBiasIntegers(opts, "b", {0.01f, 0.02f}, warnings), (std::vector<int64_t>{5, -7}));
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(givenBiasIntegers(opts, "b", {0.01f, 0.03f}, warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("channel 1"), std::string::npos) << warnings[0];
  EXPECT_TRUE(givenBiasIntegers(opts, "other", {0.01f, 0.02f}, warnings).empty());
}

}  // namespace
}  // namespace npuc::quant
