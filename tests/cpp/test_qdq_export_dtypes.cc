// The QDQ graph of issue #17's dtypes, on hand-made plans (dtype_plan_util.h): int16 Q/DQ around
// activations, blocked int4 DequantizeLinear for 1x1 convs and Gemm, the float fallback of a 3x3
// conv whose groups cut kernel windows, float int64 biases, opset 21 only when needed.
// (ONNX Runtime runs these files in tests/python/test_qdq_dtypes.py.)
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "dtype_plan_util.h"
#include "quant/graph/qdq_export.h"

namespace npuc {
namespace {

using quant::QuantScheme;
using quant::SchemeDType;

struct Exported {
  std::shared_ptr<Graph> graph;
  quant::QuantPlan plan;
  std::unique_ptr<Graph> qdq;
  onnx::ModelProto proto;
};

Exported exported(const QuantScheme& scheme) {
  Exported e;
  e.graph = testing::dtypeTestGraph();
  if (scheme.weight_group > 0) testing::zeroGroupsWithMultipliers(*e.graph, scheme.weight_group);
  e.plan = testing::handPlan(*e.graph, testing::calibratedPlan(*e.graph), scheme);
  e.qdq = quant::buildQdqGraph(*e.graph, e.plan);
  EXPECT_TRUE(e.proto.ParseFromString(quant::exportQdqOnnxBytes(*e.graph, e.plan)));
  return e;
}

int64_t defaultOpset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty()) return o.version();
  return 0;
}

const Node* readerOf(const Graph& g, const std::string& value) {
  const Value* v = g.findValue(value);
  return v && !v->uses().empty() ? v->uses().front().user : nullptr;
}

TEST(QdqExportDtypes, W4a16BlocksAlongTheReductionAndFallsBackForA3x3Conv) {
  const Exported e = exported(QuantScheme::of(SchemeDType::W4A16, 32));
  EXPECT_EQ(defaultOpset(e.proto), 21);
  EXPECT_EQ(e.proto.ir_version(), 10);
  // c1 [32, 64, 1, 1]: blocks of 32 input channels; fc [64, 10]: blocks of 32 rows.
  const Node* c1 = readerOf(*e.qdq, "c1_w_quantized");
  const Node* fc = readerOf(*e.qdq, "fc_w_quantized");
  ASSERT_TRUE(c1 && fc);
  EXPECT_EQ(c1->opType(), "DequantizeLinear");
  EXPECT_EQ(c1->attrs().i("axis", -1), 1);
  EXPECT_EQ(c1->attrs().i("block_size", 0), 32);
  EXPECT_EQ(c1->input(1)->shape(), (Shape{32, 2, 1, 1}));
  EXPECT_EQ(fc->attrs().i("axis", -1), 0);
  EXPECT_EQ(fc->input(1)->shape(), (Shape{2, 10}));
  // Block scale (c, b) = float(scales[c] * m[c, b]).
  const quant::TensorQuant& w = e.plan.at("c1_w");
  const Tensor& scale = c1->input(1)->constant();
  for (int64_t c = 0; c < 32; ++c)
    for (int64_t b = 0; b < 2; ++b)
      EXPECT_EQ(scale.data<float>()[c * 2 + b],
                w.scales[c] * static_cast<float>(w.group_multipliers[c * 2 + b]));
  // The INT4 initializers in the file: two per byte.
  int int4 = 0;
  for (const auto& init : e.proto.graph().initializer()) {
    if (init.data_type() != 22) continue;
    ++int4;
    int64_t n = 1;
    for (int64_t d : init.dims()) n *= d;
    EXPECT_EQ(static_cast<int64_t>(init.raw_data().size()), (n + 1) / 2) << init.name();
  }
  EXPECT_EQ(int4, 2);
  // c2 [64, 32, 3, 3]: a group of 32 cuts 3x3 windows, so the weight is the float q * float(s m).
  const Value* c2w = e.qdq->findValue("c2_w_dequantized");
  ASSERT_TRUE(c2w && c2w->isConstant());
  const Node* c2 = e.graph->findNode("c2");
  const quant::QuantizedWeights qw = quant::quantizeNodeWeights(*c2, e.plan);
  const quant::TensorQuant& w2 = e.plan.at("c2_w");
  const int64_t groups = 288 / 32;
  for (int64_t i = 0; i < qw.values.numel(); ++i) {
    const int64_t c = i / 288, k = i % 288;
    const float s = w2.scales[c] * static_cast<float>(w2.group_multipliers[c * groups + k / 32]);
    ASSERT_EQ(c2w->constant().data<float>()[i], static_cast<float>(qw.values.data<int8_t>()[i]) * s) << i;
  }
}

TEST(QdqExportDtypes, Int16ActivationsWeightsAndFloatInt64Biases) {
  const Exported e = exported(QuantScheme::of(SchemeDType::W16A16I));
  EXPECT_EQ(defaultOpset(e.proto), 21);
  int int16_q = 0, int8_q = 0;
  for (const Node* n : e.qdq->nodes()) {
    if (n->opType() != "QuantizeLinear") continue;
    (n->output()->dtype() == DType::Int16 ? int16_q : int8_q)++;
  }
  EXPECT_GT(int16_q, 0);
  EXPECT_EQ(int8_q, 0);
  EXPECT_EQ(e.qdq->findValue("c1_w_quantized")->constant().dtype(), DType::Int16);
  // Bias: float32 of round(b / (s_in s_w)) * s_in s_w.
  const Value* b = e.qdq->findValue("c1_b_dequantized");
  ASSERT_TRUE(b && b->isConstant() && b->dtype() == DType::Float32);
  const quant::TensorQuant& bias = e.plan.at("c1_b");
  const Tensor& raw = e.graph->findValue("c1_b")->constant();
  for (int64_t c = 0; c < raw.numel(); ++c) {
    const double s = static_cast<double>(e.plan.at("x").scales[0]) * e.plan.at("c1_w").scales[c];
    EXPECT_NEAR(bias.scales[c], s, s * 1e-6);
    EXPECT_EQ(b->constant().data<float>()[c],
              static_cast<float>(std::round(static_cast<double>(raw.data<float>()[c]) / s) * s));
  }
}

TEST(QdqExportDtypes, W8a8StaysOpset13) {
  const Exported e = exported(QuantScheme{});
  EXPECT_EQ(defaultOpset(e.proto), 13);
  EXPECT_EQ(e.proto.ir_version(), 8);
  EXPECT_EQ(e.qdq->findValue("c1_w_quantized")->constant().dtype(), DType::Int8);
}

}  // namespace
}  // namespace npuc
