// QDQ export of a quantized model: QuantizeLinear/DequantizeLinear counts, per-channel weight
// axes, int32 biases at s_in * s_w[c], FP16 nodes between half-rounding Casts, ai.npuc ops
// expanded to standard ops (differentially against their kernels), onnx.checker validity.
// The numeric comparison with ONNX Runtime is tests/python/test_qdq_export.py.
#include <gtest/gtest.h>

#include <fstream>

#include "onnx_test_util.h"
#include "opset/registry.h"
#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/qdq_export.h"
#include "quant/graph/quantizer.h"
#include "quant/graph/standard_op_expansion.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::randomTensor;

Value* npucOp(GraphBuilder& b, const std::string& op, const std::vector<Value*>& inputs,
              const Attributes& a = {}, const std::string& name = "") {
  Node* n = b.graph().appendNode(op, inputs, 1, name);
  n->setDomain(kNpucDomain);
  n->attrs() = a;
  inferNode(*n);
  return n->output();
}

// x -> Conv(bias) -> Relu -> MaxPool -> {Conv 1x1 -> Add(residual), Mul by a constant} -> Concat
//   -> GlobalAveragePool -> Flatten -> Gemm(bias) -> {Sigmoid, ai.npuc SiLU, Softmax (FP16)}.
std::unique_ptr<Graph> smallCnn() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 8, 8});
  Value* c1 = b.op(
      "Conv", {x, b.constant(randomTensor({4, 3, 3, 3}, 1), "w1"), b.constant(randomTensor({4}, 2), "b1")},
      attrs({{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      "conv1");
  Value* r = b.op("Relu", {c1}, {}, "relu");
  Value* p = b.op(
      "MaxPool", {r},
      attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}), "pool");
  Value* c2 = b.op(
      "Conv", {p, b.constant(randomTensor({4, 4, 1, 1}, 3), "w2"), b.constant(randomTensor({4}, 4), "b2")},
      attrs({{"kernel_shape", std::vector<int64_t>{1, 1}}}), "conv2");
  Value* sum = b.op("Add", {p, c2}, {}, "add");
  Value* scaled = b.op("Mul", {p, b.constant(randomTensor({1, 4, 1, 1}, 5, 0.5f, 2.0f), "gain")}, {}, "mul");
  Value* cat = b.op("Concat", {sum, scaled}, attrs({{"axis", int64_t{1}}}), "concat");
  Value* gap = b.op("GlobalAveragePool", {cat}, {}, "gap");
  Value* flat = b.op("Flatten", {gap}, attrs({{"axis", int64_t{1}}}), "flatten");
  Value* fc = b.op(
      "Gemm", {flat, b.constant(randomTensor({8, 5}, 6), "wfc"), b.constant(randomTensor({5}, 7), "bfc")}, {},
      "fc");
  b.output(b.op("Sigmoid", {fc}, {}, "sigmoid"));
  b.output(npucOp(b, "SiLU", {fc}, {}, "silu"));
  b.output(b.op("Softmax", {fc}, attrs({{"axis", int64_t{-1}}}), "softmax"));
  return b.release();
}

QuantPlan quantizePlan(const Graph& g, const QuantizerOptions& options = {}) {
  Calibrator cal(g);
  for (uint32_t s = 0; s < 4; ++s)
    cal.addSample({randomTensor(g.inputs()[0]->shape(), 100 + s, -2.0f, 2.0f)});
  return buildQuantPlan(g, cal.ranges({}), options);
}

const Node* consumerOf(const Graph& g, const std::string& input_name, const std::string& op) {
  for (const Node* n : g.nodes())
    if (n->opType() == op && n->numInputs() > 0 && n->input(0)->name() == input_name) return n;
  return nullptr;
}

size_t countQuantizedActivations(const Graph& g, const QuantPlan& plan) {
  size_t n = 0;
  for (const Value* v : g.values())
    n += !v->isConstant() && v->dtype() == DType::Float32 && plan.has(v->name());
  return n;
}

TEST(QdqExport, OneQuantizeDequantizePairPerActivationPlusWeightsBiasesAndConstants) {
  auto g = smallCnn();
  const QuantPlan plan = quantizePlan(*g);
  auto qdq = buildQdqGraph(*g, plan);
  const size_t activations = countQuantizedActivations(*g, plan);
  EXPECT_GT(activations, 10u);
  EXPECT_EQ(countOps(*qdq, "QuantizeLinear"), activations);
  // Weights of conv1, conv2, fc; their three biases; the Mul's constant gain.
  EXPECT_EQ(countOps(*qdq, "DequantizeLinear"), activations + 3 + 3 + 1);
  // The graph input is quantized first; outputs keep their names (and come out of a DQ).
  const Node* q_in = consumerOf(*qdq, "x", "QuantizeLinear");
  ASSERT_NE(q_in, nullptr);
  for (size_t i = 0; i < g->outputs().size(); ++i) {
    EXPECT_EQ(qdq->outputs()[i]->name(), g->outputs()[i]->name());
    EXPECT_EQ(qdq->outputs()[i]->producer()->opType(), "DequantizeLinear");
  }
  for (const Node* n : qdq->nodes()) EXPECT_TRUE(n->domain().empty()) << n->name() << " " << n->opType();
  EXPECT_EQ(countOps(*qdq, "SiLU"), 0u);
  qdq->verify();
}

TEST(QdqExport, ChannelWeightsCarryTheirAxisAndBiasesAreInt32AtInputTimesWeightScale) {
  auto g = smallCnn();
  const QuantPlan plan = quantizePlan(*g);
  auto qdq = buildQdqGraph(*g, plan);
  struct Expect {
    const char* weight;
    const char* bias;
    int64_t axis;
    int64_t channels;
    const char* node;
  };
  for (const Expect& e : {Expect{"w1", "b1", 0, 4, "conv1"}, Expect{"w2", "b2", 0, 4, "conv2"},
                          Expect{"wfc", "bfc", 1, 5, "fc"}}) {
    SCOPED_TRACE(e.weight);
    const Node* dq = consumerOf(*qdq, std::string(e.weight) + "_quantized", "DequantizeLinear");
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->input(0)->dtype(), DType::Int8);
    EXPECT_EQ(dq->attrs().i("axis", -1), e.axis);
    EXPECT_EQ(dq->input(1)->shape(), Shape{e.channels});
    EXPECT_EQ(dq->input(2)->dtype(), DType::Int8);
    const TensorQuant& wq = plan.at(e.weight);
    for (int64_t c = 0; c < e.channels; ++c)
      EXPECT_EQ(dq->input(1)->constant().data<float>()[c], wq.scales[c]);
    const Tensor& q = dq->input(0)->constant();
    for (int64_t i = 0; i < q.numel(); ++i) ASSERT_GE(q.data<int8_t>()[i], -127) << "weights are symmetric";

    const Node* bdq = consumerOf(*qdq, std::string(e.bias) + "_quantized", "DequantizeLinear");
    ASSERT_NE(bdq, nullptr);
    EXPECT_EQ(bdq->input(0)->dtype(), DType::Int32);
    EXPECT_EQ(bdq->numInputs(), 2u) << "an int32 bias has no zero point";
    const float s_in = plan.at(g->findNode(e.node)->input(0)->name()).scales[0];
    for (int64_t c = 0; c < e.channels; ++c)
      EXPECT_FLOAT_EQ(bdq->input(1)->constant().data<float>()[c], s_in * wq.scales[c]);
    // The dequantized bias is within half a step of the float bias.
    const Tensor& fb = g->findValue(e.bias)->constant();
    for (int64_t c = 0; c < e.channels; ++c) {
      const double real =
          bdq->input(0)->constant().data<int32_t>()[c] * double{bdq->input(1)->constant().data<float>()[c]};
      EXPECT_NEAR(real, fb.data<float>()[c], 0.5 * s_in * wq.scales[c] * 1.001);
    }
  }
}

TEST(QdqExport, LayerGranularityWritesPerTensorScales) {
  auto g = smallCnn();
  QuantizerOptions layer;
  layer.granularity = WeightGranularity::PerTensor;
  auto qdq = buildQdqGraph(*g, quantizePlan(*g, layer));
  const Node* dq = consumerOf(*qdq, "w1_quantized", "DequantizeLinear");
  ASSERT_NE(dq, nullptr);
  EXPECT_FALSE(dq->attrs().has("axis"));
  EXPECT_EQ(dq->input(1)->rank(), 0);
}

TEST(QdqExport, Fp16NodesSitBetweenHalfRoundingCasts) {
  auto g = smallCnn();
  QuantizerOptions hybrid;
  hybrid.hybrid_layers = {"conv2"};
  const QuantPlan plan = quantizePlan(*g, hybrid);
  ASSERT_EQ(plan.precisionOf("softmax"), NodePrecision::Float16);
  auto qdq = buildQdqGraph(*g, plan);
  for (const char* name : {"softmax", "conv2"}) {
    SCOPED_TRACE(name);
    const Node* n = qdq->findNode(name);
    ASSERT_NE(n, nullptr);
    for (const Value* in : n->inputs()) {
      ASSERT_EQ(in->producer()->opType(), "Cast");
      EXPECT_EQ(in->producer()->input(0)->dtype(), DType::Float16);
    }
    ASSERT_EQ(n->output()->uses().size(), 1u);
    EXPECT_EQ(n->output()->uses()[0].user->opType(), "Cast");
  }
  // A hybrid Conv keeps float weights: only conv1 and fc have int8 weights and int32 biases.
  EXPECT_EQ(countOps(*qdq, "DequantizeLinear"), countOps(*qdq, "QuantizeLinear") + 2 + 2 + 1);
  QdqExportOptions plain;
  plain.emulate_fp16_rounding = false;
  EXPECT_EQ(countOps(*buildQdqGraph(*g, plan, plain), "Cast"), 0u);
}

TEST(QdqExport, Float16ModelHasNoQuantizationOnlyCasts) {
  auto g = smallCnn();
  QdqExportOptions fp16;
  fp16.float16_model = true;
  auto out = buildQdqGraph(*g, QuantPlan{}, fp16);
  EXPECT_EQ(countOps(*out, "QuantizeLinear"), 0u);
  EXPECT_EQ(countOps(*out, "DequantizeLinear"), 0u);
  EXPECT_GT(countOps(*out, "Cast"), 20u);
}

TEST(QdqExport, ExportedModelPassesTheOnnxChecker) {
  auto g = smallCnn();
  const std::string bytes = exportQdqOnnxBytes(*g, quantizePlan(*g));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  size_t q = 0, dq = 0;
  for (const auto& n : m.graph().node()) {
    q += n.op_type() == "QuantizeLinear";
    dq += n.op_type() == "DequantizeLinear";
    EXPECT_TRUE(n.domain().empty()) << n.name();
  }
  EXPECT_GT(q, 0u);
  EXPECT_GT(dq, q);
  ASSERT_EQ(m.opset_import_size(), 1) << "only the default domain";
  EXPECT_EQ(m.opset_import(0).version(), 13);
  if (!testing::pythonHas("onnx")) NPUC_SKIP_MISSING_DEP("python3 onnx not installed: checker not run");
  testing::TempDir dir;
  const std::string path = (dir.path() / "qdq.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes;
  const std::string script = (testing::testsDir() / "models" / "check_onnx.py").string();
  auto [status, out] = testing::runCommand(std::string(testing::kSystemPython) + " " + script + " " + path);
  EXPECT_EQ(status, 0) << out;
}

TEST(QdqExport, NpucOpsExpandToStandardOpsWithTheSameResults) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 8});
  Value* gelu = npucOp(b, "Gelu", {x}, attrs({{"approximate", std::string("none")}}), "gelu");
  Value* gelu_tanh = npucOp(b, "Gelu", {gelu}, attrs({{"approximate", std::string("tanh")}}), "gelu_tanh");
  Value* silu = npucOp(b, "SiLU", {gelu_tanh}, {}, "silu");
  Value* glu = npucOp(b, "GLU", {silu}, attrs({{"axis", int64_t{-1}}}), "glu");
  b.output(npucOp(b, "RMSNorm", {glu, b.randomConstant({4}, 3)}, attrs({{"epsilon", 1e-5f}}), "rms"));
  b.output(b.op("Mish", {x}, {}, "mish"));
  auto original = b.release();
  auto expanded = original->clone();
  expandToStandardOps(*expanded);
  for (const Node* n : expanded->nodes()) {
    EXPECT_TRUE(n->domain().empty()) << n->name();
    EXPECT_NE(n->opType(), "Mish");
  }
  EXPECT_EQ(passtest::countOps(*expanded, "Erf"), 1u);
  EXPECT_EQ(passtest::countOps(*expanded, "Split"), 1u);
  expanded->verify();
  passtest::expectTypesConsistent(*expanded);
  // The npuc kernels use fast sigmoid/tanh/erf approximations; the standard ops do not.
  passtest::expectSameResults(*original, *expanded, 1e-4);
}

TEST(QdqExport, ConvActIsRefusedNamingTheNode) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Node* n = b.graph().appendNode("ConvAct", {x, b.randomConstant({2, 2, 1, 1}, 1)}, 1, "fused_conv");
  n->setDomain(kNpucDomain);
  n->attrs().set("kernel_shape", std::vector<int64_t>{1, 1});
  inferNode(*n);
  b.output(n->output());
  auto g = b.release();
  try {
    expandToStandardOps(*g);
    FAIL() << "ConvAct must be refused";
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find("fused_conv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ConvAct"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g->numNodes(), 1u) << "refused before modifying anything";
}

}  // namespace
}  // namespace npuc::quant
