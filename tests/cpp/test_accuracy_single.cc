// The accuracy analysis' "single" mode (each layer alone on its quantized FP32 inputs): equal to
// the end-to-end ("entire") run on the first layer, isolates the layer that quantizes badly from
// the ones after it that only inherit its error, and is consistent in FP16 mode.
#include <gtest/gtest.h>

#include "common/error.h"
#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/accuracy_analysis.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

const std::vector<int64_t> kSamePad = {1, 1, 1, 1};

// c1 -> c2 -> c3, 3x3 convs over 4 channels. c1's output channel 0 is exactly zero (zero weights
// and bias: a dead channel), and c2's output channel 0 is one huge weight reading it (an outlier
// channel). In FP32 the huge weight multiplies zeros and changes nothing; per output channel it
// only sets its own channel's scale; with one scale per tensor ("layer") it sets c2's scale,
// every other weight of c2 rounds to 0 and c2's output is its bias alone.
struct OutlierChain {
  GraphBuilder b;
  OutlierChain() {
    Value* x = b.input("x", {1, 3, 8, 8});
    Tensor w1 = randomTensor({4, 3, 3, 3}, 11);
    Tensor b1 = randomTensor({4}, 12);
    for (int64_t i = 0; i < 27; ++i) w1.data<float>()[i] = 0.0f;  // output channel 0
    b1.data<float>()[0] = 0.0f;
    Tensor w2 = randomTensor({4, 4, 3, 3}, 13);
    for (int64_t i = 0; i < 36; ++i) w2.data<float>()[i] = 0.0f;  // output channel 0 ...
    w2.data<float>()[4] = 1000.0f;  // ... but one huge weight on input channel 0, centre tap
    Value* c1 = b.op("Conv", {x, b.constant(w1), b.constant(b1)}, attrs({{"pads", kSamePad}}), "c1");
    Value* c2 = b.op("Conv", {c1, b.constant(w2), b.randomConstant({4}, 14, -0.1f, 0.1f)},
                     attrs({{"pads", kSamePad}}), "c2");
    Value* c3 = b.op("Conv", {c2, b.randomConstant({4, 4, 3, 3}, 15), b.randomConstant({4}, 16)},
                     attrs({{"pads", kSamePad}}), "c3");
    b.output(c3);
  }
};

std::vector<Tensor> samples(int n) {
  std::vector<Tensor> s;
  for (int i = 0; i < n; ++i)
    s.push_back(randomTensor({1, 3, 8, 8}, 100 + static_cast<uint32_t>(i), -2.0f, 2.0f));
  return s;
}

QuantPlan planFor(const Graph& g, WeightGranularity granularity) {
  Calibrator cal(g);
  for (const Tensor& s : samples(4)) cal.addSample({s});
  QuantizerOptions options;
  options.granularity = granularity;
  return buildQuantPlan(g, cal.ranges({}), options);
}

const LayerAccuracy& rowOf(const std::vector<LayerAccuracy>& rows, const std::string& node) {
  for (const LayerAccuracy& r : rows)
    if (r.node == node) return r;
  throw std::runtime_error("no row for node " + node);
}

TEST(AccuracySingle, FirstLayerSingleEqualsEntire) {
  OutlierChain chain;
  const QuantPlan plan = planFor(chain.b.graph(), WeightGranularity::PerChannel);
  QuantizedExecutor sim(chain.b.graph(), plan);
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(sim, plan, {samples(1)[0]});
  ASSERT_EQ(rows.size(), 4u);
  // The input row and c1 read the same quantized input in both modes: identical numbers.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rows[i].single.cosine, rows[i].metrics.cosine) << rows[i].value;
    EXPECT_EQ(rows[i].single.euclidean, rows[i].metrics.euclidean) << rows[i].value;
    EXPECT_EQ(rows[i].single.sqnr_db, rows[i].metrics.sqnr_db) << rows[i].value;
  }
  EXPECT_GT(rows[1].single.cosine, 0.99);
}

TEST(AccuracySingle, IsolatesTheLayerThatQuantizesBadly) {
  OutlierChain chain;
  const QuantPlan plan = planFor(chain.b.graph(), WeightGranularity::PerTensor);
  QuantizedExecutor sim(chain.b.graph(), plan);
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(sim, plan, {samples(5)[4]});
  const LayerAccuracy& c2 = rowOf(rows, "c2");
  const LayerAccuracy& c3 = rowOf(rows, "c3");
  EXPECT_LT(c2.single.cosine, 0.9) << "c2's weights all round to zero but one";
  EXPECT_LT(c3.metrics.cosine, 0.9) << "c3 inherits c2's error end to end";
  EXPECT_GT(c3.single.cosine, 0.99) << "alone, on correct inputs, c3 quantizes well";
  EXPECT_GT(rowOf(rows, "c1").single.cosine, 0.99);
}

TEST(AccuracySingle, PerChannelWeightsFixTheOutlierLayer) {
  OutlierChain chain;
  const QuantPlan plan = planFor(chain.b.graph(), WeightGranularity::PerChannel);
  QuantizedExecutor sim(chain.b.graph(), plan);
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(sim, plan, {samples(5)[4]});
  for (const LayerAccuracy& r : rows) EXPECT_GT(r.single.cosine, 0.99) << r.value;
}

TEST(AccuracySingle, Fp16LayerInTheChainIsCloseToFloat) {
  OutlierChain chain;
  QuantizerOptions options;
  options.granularity = WeightGranularity::PerTensor;
  options.hybrid_layers = {"c2"};
  Calibrator cal(chain.b.graph());
  for (const Tensor& s : samples(4)) cal.addSample({s});
  const QuantPlan plan = buildQuantPlan(chain.b.graph(), cal.ranges({}), options);
  QuantizedExecutor sim(chain.b.graph(), plan);
  AccuracyTensors tensors;
  const std::vector<LayerAccuracy> rows = analyzeAccuracy(sim, plan, {samples(5)[4]}, &tensors);
  EXPECT_EQ(rowOf(rows, "c2").precision, "fp16");
  EXPECT_GT(rowOf(rows, "c2").single.cosine, 0.999);
  EXPECT_GT(rowOf(rows, "c3").metrics.cosine, 0.99) << "with c2 in FP16 the chain is accurate again";
  // Every compared value is handed back, in all three runs.
  for (const LayerAccuracy& r : rows) {
    EXPECT_EQ(tensors.fp32.count(r.value), 1u) << r.value;
    EXPECT_EQ(tensors.simulated.count(r.value), 1u) << r.value;
  }
  EXPECT_EQ(tensors.single.count("x"), 0u) << "a graph input has no isolated run of its own";
  EXPECT_EQ(tensors.single.count(rowOf(rows, "c3").value), 1u);
}

TEST(AccuracySingle, MissingGoldenValueIsNamed) {
  OutlierChain chain;
  QuantizedExecutor sim(chain.b.graph());
  const Tensor x = samples(1)[0];
  try {
    sim.runEachNodeIsolated({x}, {{"x", x}});  // c1's output, read by c2, is missing
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("c2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npuc::quant
