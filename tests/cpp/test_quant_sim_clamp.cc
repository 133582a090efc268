// The simulator's Relu/Clip step: after a fused clamp (the producer already requantized to the
// activation's range) it hands on its input's bytes; otherwise it clamps. Both must give the
// bytes a plain element-wise clamp gives. Also: Tensor::uninitialized allocates like Tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

std::unique_ptr<QuantizedExecutor> quantized(const Graph& g, const std::vector<Tensor>& samples,
                                             QuantPlan& plan) {
  Calibrator cal(g);
  for (const Tensor& s : samples) cal.addSample({s});
  plan = buildQuantPlan(g, cal.ranges({}), {});
  return std::make_unique<QuantizedExecutor>(g, plan, SimOptions{SimMode::Int8, SimPath::Fast});
}

// Every activation dequantized; the clamp's output must be the clamp of its input's values
// (same parameters, so clamping the bytes and the dequantized values agree exactly).
void expectClampOf(const std::map<std::string, Tensor>& values, const std::string& in, const std::string& out,
                   float lo, float hi) {
  const Tensor& x = values.at(in);
  const Tensor& y = values.at(out);
  ASSERT_EQ(x.numel(), y.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    EXPECT_EQ(y.data<float>()[i], v < lo ? lo : (v > hi ? hi : v)) << out << " element " << i;
  }
}

TEST(QuantSimClamp, FusedReluSharesTheConvBytesAndUnfusedReluClamps) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 9, 9});
  Value* c1 = b.op("Conv", {x, b.randomConstant({8, 4, 3, 3}, 5, -0.4f, 0.4f), b.randomConstant({8}, 6)},
                   attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "c1");
  Value* r1 = b.op("Relu", {c1}, {}, "r1");  // c1's only consumer: fused
  Value* c2 = b.op("Conv", {r1, b.randomConstant({8, 8, 1, 1}, 7, -0.4f, 0.4f)}, {}, "c2");
  Value* r2 = b.op("Relu", {c2}, {}, "r2");  // c2 is also a graph output: not fused
  b.output(r2);
  b.output(c2);
  const std::vector<Tensor> samples{randomTensor({1, 4, 9, 9}, 11, -2.0f, 2.0f),
                                    randomTensor({1, 4, 9, 9}, 12, -2.0f, 2.0f)};
  QuantPlan plan;
  auto sim = quantized(b.graph(), samples, plan);
  ASSERT_EQ(plan.at(c1->name()).zero_points[0], -128);  // fused: the clamp is the saturation
  ASSERT_GT(plan.at(c2->name()).zero_points[0], -128);  // unfused: negative values exist
  for (const Tensor& s : samples) {
    const auto values = sim->runAllValues({s});
    const float inf = std::numeric_limits<float>::infinity();
    expectClampOf(values, c1->name(), r1->name(), 0.0f, inf);
    expectClampOf(values, c2->name(), r2->name(), 0.0f, inf);
    EXPECT_TRUE(values.at(c1->name()).bitwiseEqual(values.at(r1->name())));
    const Tensor& unfused = values.at(c2->name());
    EXPECT_TRUE(std::any_of(unfused.data<float>(), unfused.data<float>() + unfused.numel(), [](float v) {
      return v < 0.0f;
    })) << "the unfused clamp was not exercised";
  }
}

TEST(TensorUninitialized, SameShapeDtypeAndAlignmentAsAZeroFilledTensor) {
  const Tensor t = Tensor::uninitialized(DType::Int8, {2, 3, 5});
  EXPECT_EQ(t.dtype(), DType::Int8);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
  EXPECT_TRUE(Tensor::uninitialized(DType::Float32, {0}).defined());
  EXPECT_THROW(Tensor::uninitialized(DType::Float32, {int64_t{1} << 40}), ResourceError);
}

}  // namespace
}  // namespace npuc::quant
