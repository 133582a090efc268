// The quantizer gives a Concat input that only the Concat reads the Concat's parameters (its
// producer, or the Conv feeding its fused ReLU, requantizes straight onto the Concat's grid, so
// the Concat is a byte copy), keeps its own parameters for an input with another reader, and the
// simulator's reference and fast paths still agree to the bit. A Concat read only by a Relu (the
// passes move a Relu below a Concat) takes the Relu's range, and so do its sole-reader inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/accuracy_analysis.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

struct ConcatModel {
  std::unique_ptr<Graph> graph;
  Value *relu, *shared, *concat;
};

// x -> conv_a -> Relu ─┐
// x -> conv_b ─────────┼─ Concat -> output      (conv_b's output is also a graph output)
ConcatModel concatModel() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* a = b.op("Conv", {x, b.randomConstant({4, 3, 1, 1}, 1), b.randomConstant({4}, 2)}, {}, "conv_a");
  Value* relu = b.op("Relu", {a}, {}, "relu");
  Value* wide = b.constant(randomTensor({5, 3, 1, 1}, 3, -4.0f, 4.0f), "w_b");
  Value* bconv = b.op("Conv", {x, wide}, {}, "conv_b");
  Value* cat = b.op("Concat", {relu, bconv}, attrs({{"axis", int64_t{1}}}), "concat");
  b.output(cat);
  b.output(bconv);
  return ConcatModel{b.release(), relu, bconv, cat};
}

TEST(QuantConcatShare, SoleReaderInputTakesTheConcatParameters) {
  ConcatModel m = concatModel();
  Calibrator cal(*m.graph);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor({1, 3, 6, 6}, s)});
  const QuantPlan plan = buildQuantPlan(*m.graph, cal.ranges({}), {});
  const QuantParams cat = plan.tensors.at(m.concat->name()).params(m.concat->name());
  const QuantParams relu = plan.tensors.at(m.relu->name()).params(m.relu->name());
  const QuantParams shared = plan.tensors.at(m.shared->name()).params(m.shared->name());
  EXPECT_EQ(relu.scale, cat.scale);
  EXPECT_EQ(relu.zero_point, cat.zero_point);
  // conv_b's output is also a graph output: it keeps the parameters of its own range.
  const ClipRange own = cal.ranges({}).at(m.shared->name());
  const QuantParams expected = chooseActivationParams(own.min, own.max);
  EXPECT_EQ(shared.scale, expected.scale);
  EXPECT_EQ(shared.zero_point, expected.zero_point);
}

TEST(QuantConcatShare, SimulatorStaysBitExactBetweenPaths) {
  ConcatModel m = concatModel();
  Calibrator cal(*m.graph);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor({1, 3, 6, 6}, s)});
  const QuantPlan plan = buildQuantPlan(*m.graph, cal.ranges({}), {});
  SimOptions fast_options, reference_options;
  reference_options.path = SimPath::Reference;
  const QuantizedExecutor fast(*m.graph, plan, fast_options);
  const QuantizedExecutor reference(*m.graph, plan, reference_options);
  const std::vector<Tensor> in = {randomTensor({1, 3, 6, 6}, 11)};
  const std::vector<Tensor> a = fast.run(in), b = reference.run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) EXPECT_EQ(a[i].data<float>()[j], b[i].data<float>()[j]);
}

// x -> conv_a ─┐
// x -> conv_b ─┴─ Concat -> Relu -> output
std::unique_ptr<Graph> concatReluModel() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* a = b.op("Conv", {x, b.randomConstant({4, 3, 1, 1}, 21), b.randomConstant({4}, 22)}, {}, "conv_a");
  Value* c = b.op("Conv", {x, b.randomConstant({5, 3, 3, 3}, 23)},
                  attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "conv_b");
  Value* cat = b.op("Concat", {a, c}, attrs({{"axis", int64_t{1}}}), "concat");
  b.output(b.op("Relu", {cat}, {}, "relu"));
  return b.release();
}

TEST(QuantConcatShare, ConcatFeedingOnlyAReluTakesTheReluRange) {
  std::unique_ptr<Graph> g = concatReluModel();
  Calibrator cal(*g);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor({1, 3, 6, 6}, s)});
  const std::map<std::string, ClipRange> ranges = cal.ranges({});
  const QuantPlan plan = buildQuantPlan(*g, ranges, {});
  const Node* concat = g->findNode("concat");
  const Value* relu_out = g->findNode("relu")->output(0);
  const QuantParams relu = plan.tensors.at(relu_out->name()).params();
  // The Concat's own calibrated range has negative values; the Relu's does not.
  ASSERT_LT(ranges.at(concat->output(0)->name()).min, 0.0f);
  EXPECT_EQ(relu.zero_point, -128);
  for (const Value* v : {concat->output(0), concat->input(0), concat->input(1)}) {
    const QuantParams p = plan.tensors.at(v->name()).params();
    EXPECT_EQ(p.scale, relu.scale) << v->name();
    EXPECT_EQ(p.zero_point, relu.zero_point) << v->name();
  }
}

TEST(QuantConcatShare, ConcatReluStaysWithinTwoStepsOfFloat) {
  std::unique_ptr<Graph> g = concatReluModel();
  Calibrator cal(*g);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor({1, 3, 6, 6}, s)});
  const QuantPlan plan = buildQuantPlan(*g, cal.ranges({}), {});
  const float step = plan.tensors.at(g->outputs()[0]->name()).scales[0];
  const QuantizedExecutor sim(*g, plan, SimOptions{});
  const std::vector<Tensor> in = {randomTensor({1, 3, 6, 6}, 2)};  // a calibration sample: no clipping
  const Tensor ref = Executor(*g).run(in)[0];
  const Tensor got = sim.run(in)[0];
  double worst = 0.0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    EXPECT_GE(got.data<float>()[i], 0.0f) << "element " << i;
    worst = std::max(worst, std::abs(double{ref.data<float>()[i]} - got.data<float>()[i]) / step);
  }
  // Rounded once onto the Relu's grid, plus the int8 input's and weights' error through the
  // conv (the single-MAC-op bound of test_quant_sim.cc); negatives are clamped to exactly 0.
  EXPECT_LE(worst, 2.0);
}

TEST(QuantConcatShare, AccuracyAnalysisComparesClampedConcatInputsWithTheClampedFloat) {
  std::unique_ptr<Graph> g = concatReluModel();
  Calibrator cal(*g);
  for (uint32_t s = 0; s < 4; ++s) cal.addSample({randomTensor({1, 3, 6, 6}, s)});
  const QuantPlan plan = buildQuantPlan(*g, cal.ranges({}), {});
  const QuantizedExecutor sim(*g, plan, SimOptions{});
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(sim, plan, {randomTensor({1, 3, 6, 6}, 1)});
  int clamped_rows = 0;
  for (const LayerAccuracy& row : rows) {
    if (row.node != "conv_a" && row.node != "conv_b") continue;
    ++clamped_rows;
    EXPECT_NE(row.precision.find("clamped by relu"), std::string::npos) << row.precision;
    // Against the unclamped FP32 value the negatives would count as error (cosine near 0.7).
    EXPECT_GT(row.metrics.cosine, 0.99) << row.node;
    EXPECT_GT(row.single.cosine, 0.99) << row.node;
  }
  EXPECT_EQ(clamped_rows, 2);
}

}  // namespace
}  // namespace npuc::quant
