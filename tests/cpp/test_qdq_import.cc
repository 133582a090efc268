// QDQ import (quant/graph/qdq_import.h, given_params.h): npuc's own QDQ export stripped back into a
// float graph plus given parameters rebuilds the same plan and the same simulator outputs; patterns
// that cannot be mapped are refused naming the node. The Toolkit-level tests (real models, uint8,
// asymmetric weights, PyTorch) are tests/python/test_qdq_import.py.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/given_params.h"
#include "quant/graph/qdq_export.h"
#include "quant/graph/qdq_import.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

// x -> Conv(bias) -> Relu -> Conv -> Add(residual) -> GlobalAveragePool -> Flatten -> Gemm -> Softmax.
std::unique_ptr<Graph> residualNet() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 8, 8});
  const Attributes k3 =
      attrs({{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* c1 = b.op(
      "Conv", {x, b.constant(randomTensor({4, 3, 3, 3}, 1), "w1"), b.constant(randomTensor({4}, 2), "b1")},
      k3, "conv1");
  Value* r = b.op("Relu", {c1}, {}, "relu");
  Value* c2 = b.op(
      "Conv", {r, b.constant(randomTensor({4, 4, 3, 3}, 3), "w2"), b.constant(randomTensor({4}, 4), "b2")},
      k3, "conv2");
  Value* sum = b.op("Add", {r, c2}, {}, "add");
  Value* gap = b.op("GlobalAveragePool", {sum}, {}, "gap");
  Value* flat = b.op("Flatten", {gap}, attrs({{"axis", int64_t{1}}}), "flatten");
  Value* fc = b.op(
      "Gemm", {flat, b.constant(randomTensor({4, 5}, 5), "wfc"), b.constant(randomTensor({5}, 6), "bfc")}, {},
      "fc");
  b.output(b.op("Softmax", {fc}, attrs({{"axis", int64_t{-1}}}), "softmax"));
  return b.release();
}

QuantPlan calibratedPlan(const Graph& g) {
  Calibrator cal(g);
  for (uint32_t s = 0; s < 3; ++s)
    cal.addSample({randomTensor(g.inputs()[0]->shape(), 100 + s, -2.0f, 2.0f)});
  return buildQuantPlan(g, cal.ranges({}), {});
}

TEST(QdqImport, NpucExportStripsBackToTheSamePlanAndBitIdenticalOutputs) {
  std::unique_ptr<Graph> g = residualNet();
  separateSharedParameters(*g);
  const QuantPlan plan = calibratedPlan(*g);
  std::unique_ptr<Graph> qdq = buildQdqGraph(*g, plan);

  ASSERT_TRUE(isQdqModel(*qdq));
  QdqImport imp = importQdq(*qdq);
  EXPECT_FALSE(isQdqModel(*imp.graph));
  EXPECT_EQ(imp.graph->numNodes(), g->numNodes());
  EXPECT_TRUE(imp.fp16_nodes.count("softmax"));  // its half-rounding Casts were stripped
  EXPECT_EQ(imp.given.at("w1").scales, plan.at("w1").scales);
  EXPECT_EQ(imp.integers.at("b1").dtype(), DType::Int32);

  const GivenFit fit = fitGivenParameters(*imp.graph, *imp.graph, imp.given, imp.integers, false);
  EXPECT_EQ(fit.requantized, 0);
  EXPECT_EQ(fit.inexact_biases, 0);
  QuantizerOptions opts;
  opts.given = fit.given;
  const QuantPlan again = buildQuantPlan(*imp.graph, {}, opts);  // no ranges: everything is given
  for (const auto& [name, t] : plan.tensors) {
    ASSERT_TRUE(again.has(name)) << name;
    EXPECT_EQ(again.at(name).scales, t.scales) << name;
    EXPECT_EQ(again.at(name).zero_points, t.zero_points) << name;
  }

  const Tensor x = randomTensor({1, 3, 8, 8}, 7, -2.0f, 2.0f);
  const Tensor want = QuantizedExecutor(*g, plan).run({x})[0];
  const Tensor got = QuantizedExecutor(*imp.graph, again).run({x})[0];
  ASSERT_EQ(want.numel(), got.numel());
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(want.data<float>()[i], got.data<float>()[i]) << i;
}

TEST(QdqImport, DequantizeOfAnActivationWithoutQuantizeIsRefusedNamingTheNode) {
  GraphBuilder b;
  Value* xi = b.input("xi", {1, 4}, DType::Int8);
  Value* dq =
      b.op("DequantizeLinear",
           {xi, b.constant(Tensor::scalar<float>(0.1f), "s"), b.constant(Tensor::scalar<int8_t>(0), "z")}, {},
           "dq_input");
  b.output(b.op("Relu", {dq}, {}, "relu"));
  std::unique_ptr<Graph> g = b.release();
  try {
    importQdq(*g);
    FAIL() << "expected UnsupportedOpError";
  } catch (const UnsupportedOpError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node 'dq_input' (DequantizeLinear)"), std::string::npos) << m;
    EXPECT_NE(m.find("pattern: DQ on an activation without a Q"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace npuc::quant
