// Whole-graph shape inference with constant folding: shape sub-graphs disappear, the size cap
// is honoured, dead code goes, errors name the node, unsupported ops/dtypes are reported.
#include <gtest/gtest.h>

#include "frontend/shape_inference.h"
#include "opset/eval.h"
#include "opset/registry.h"

namespace npuc {
namespace {

Value* i64s(Graph& g, const std::vector<int64_t>& v, const std::string& name) {
  return g.addConstant(Tensor::fromVector(v, {static_cast<int64_t>(v.size())}), name);
}

// The PyTorch channel-shuffle pattern: x.reshape(x.shape[0], -1) with the batch dim read at run
// time through Shape -> Gather -> Unsqueeze -> Concat.
struct ShapeSubgraph {
  Graph g;
  Node* reshape;
  ShapeSubgraph() {
    Value* x = g.addInput("x", DType::Float32, {2, 3, 4});
    Node* shape = g.appendNode("Shape", {x}, 1, "shape");
    Node* gather = g.appendNode("Gather", {shape->output(), g.addConstant(Tensor::scalar<int64_t>(0), "idx")},
                                1, "gather");
    Node* unsq = g.appendNode("Unsqueeze", {gather->output(), i64s(g, {0}, "axes")}, 1, "unsqueeze");
    Node* concat = g.appendNode("Concat", {unsq->output(), i64s(g, {-1}, "minus_one")}, 1, "concat");
    concat->attrs().set("axis", int64_t{0});
    reshape = g.appendNode("Reshape", {x, concat->output()}, 1, "reshape");
    g.addOutput(reshape->output());
  }
};

TEST(FrontendShapeInference, ShapeSubgraphFoldsToAConstant) {
  ShapeSubgraph s;
  const FoldStats stats = inferShapesAndFold(s.g);
  EXPECT_EQ(stats.folded_nodes, 4u);
  ASSERT_EQ(s.g.numNodes(), 1u);
  EXPECT_EQ(s.g.firstNode(), s.reshape);
  ASSERT_TRUE(s.reshape->input(1)->isConstant());
  EXPECT_EQ(s.reshape->input(1)->constant().toInt64Vector(), std::vector<int64_t>({2, -1}));
  EXPECT_EQ(s.reshape->input(1)->name(), "concat_out0");  // folded values keep their names
  EXPECT_EQ(s.reshape->output()->shape(), Shape({2, 12}));
  // The inputs of the folded nodes were constants nobody reads any more.
  EXPECT_EQ(s.g.findValue("idx"), nullptr);
  EXPECT_EQ(s.g.findValue("minus_one"), nullptr);
  s.g.verify();
}

TEST(FrontendShapeInference, ShapeSlicingAttributesAndSize) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {2, 3, 4, 5});
  Node* shape = g.appendNode("Shape", {x}, 1, "shape");
  shape->attrs().set("start", int64_t{1});
  shape->attrs().set("end", int64_t{-1});
  Node* size = g.appendNode("Size", {x}, 1, "size");
  g.addOutput(shape->output());
  g.addOutput(size->output());
  inferShapesAndFold(g);
  EXPECT_EQ(g.numNodes(), 0u);
  EXPECT_EQ(g.outputs()[0]->constant().toInt64Vector(), std::vector<int64_t>({3, 4}));
  EXPECT_EQ(g.outputs()[0]->name(), "shape_out0");
  EXPECT_EQ(g.outputs()[1]->constant().toInt64Vector(), std::vector<int64_t>({120}));
}

TEST(FrontendShapeInference, FoldingRespectsTheSizeCap) {
  auto build = [](Graph& g) {
    Value* x = g.addInput("x", DType::Float32, {256, 256});
    Node* fill = g.appendNode("ConstantOfShape", {i64s(g, {256, 256}, "dims")}, 1, "fill");
    Node* add = g.appendNode("Add", {x, fill->output()}, 1, "add");
    g.addOutput(add->output());
  };
  Graph capped;
  build(capped);
  const FoldStats kept = inferShapesAndFold(capped, 1024);
  EXPECT_EQ(kept.folded_nodes, 0u);
  EXPECT_EQ(kept.kept_over_limit, 1u);
  EXPECT_EQ(capped.numNodes(), 2u);
  EXPECT_EQ(capped.findValue("fill_out0")->shape(), Shape({256, 256}));

  Graph roomy;
  build(roomy);
  const FoldStats folded = inferShapesAndFold(roomy, 1 << 20);
  EXPECT_EQ(folded.folded_nodes, 1u);
  EXPECT_EQ(roomy.numNodes(), 1u);
  EXPECT_EQ(roomy.findValue("fill_out0")->constant().numel(), 256 * 256);
}

TEST(FrontendShapeInference, FoldSizeIsEstimatedWithoutWrapping) {
  // Tile of 4 int64 by 2^60: 2^62 elements, 2^65 bytes. The estimate saturates instead of wrapping
  // to 0 (which would "fit" and send the node to the evaluator): the node is kept.
  Graph g;
  Node* tile =
      g.appendNode("Tile", {i64s(g, {0, 1, 2, 3}, "c"), i64s(g, {int64_t{1} << 60}, "reps")}, 1, "tile");
  g.addOutput(tile->output());
  inferNode(*tile);
  EXPECT_EQ(foldOutputBytes(*tile), INT64_MAX);
  const FoldStats stats = inferShapesAndFold(g, kDefaultFoldLimitBytes);
  EXPECT_EQ(stats.folded_nodes, 0u);
  EXPECT_EQ(stats.kept_over_limit, 1u);
  EXPECT_EQ(g.outputs()[0]->shape(), Shape({int64_t{1} << 62}));

  Graph small;
  Node* relu = small.appendNode("Relu", {small.addInput("x", DType::Float32, {2, 3})}, 1, "relu");
  inferNode(*relu);
  EXPECT_EQ(foldOutputBytes(*relu), 24);
}

TEST(FrontendShapeInference, DeadNodesAreRemoved) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {4});
  Node* unused_a = g.appendNode("Relu", {x}, 1, "dead_relu");
  g.appendNode("Neg", {unused_a->output()}, 1, "dead_neg");
  Node* live = g.appendNode("Abs", {x}, 1, "live");
  g.addOutput(live->output());
  g.addConstant(Tensor::scalar(1.0f), "stray");
  inferShapesAndFold(g);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.firstNode()->name(), "live");
  EXPECT_EQ(g.findValue("stray"), nullptr);
}

TEST(FrontendShapeInference, ErrorsNameTheNode) {
  Graph g;
  Value* a = g.addInput("a", DType::Float32, {2, 3});
  Value* b = g.addInput("b", DType::Float32, {4});
  Node* add = g.appendNode("Add", {a, b}, 1, "bad_add");
  g.addOutput(add->output());
  try {
    inferShapesAndFold(g);
    ADD_FAILURE() << "no exception";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad_add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
  }
}

TEST(FrontendShapeInference, UnsupportedOpIsReported) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {1});
  Node* n = g.appendNode("NoSuchOp", {x}, 1, "mystery");
  g.addOutput(n->output());
  EXPECT_THROW(checkOpsSupported(g), UnsupportedOpError);
  EXPECT_THROW(inferShapesAndFold(g), UnsupportedOpError);
}

TEST(FrontendShapeInference, UnsupportedInputDTypeIsReported) {
  // Any registered op with a dtype restriction will do; the registry is owned by the op teams.
  const OpRegistry& reg = OpRegistry::instance();
  for (const std::string& full : reg.opTypes()) {
    const size_t dot = full.rfind('.');
    const std::string domain = dot == std::string::npos ? "" : full.substr(0, dot);
    const std::string op = dot == std::string::npos ? full : full.substr(dot + 1);
    const OpSchema* s = reg.find(op, domain);
    if (!s || s->dtypes.empty() || s->min_inputs < 1) continue;
    DType other = DType::Undefined;
    for (DType d : {DType::Int64, DType::Bool, DType::Float64, DType::UInt8, DType::Float32}) {
      if (std::find(s->dtypes.begin(), s->dtypes.end(), d) == s->dtypes.end()) {
        other = d;
        break;
      }
    }
    if (other == DType::Undefined) continue;
    Graph g;
    std::vector<Value*> ins;
    for (int i = 0; i < s->min_inputs; ++i) ins.push_back(g.addInput("in" + std::to_string(i), other, {1}));
    Node* n = g.appendNode(op, ins, static_cast<size_t>(s->min_outputs), "typed");
    n->setDomain(domain);
    try {
      checkOpsSupported(g);
      ADD_FAILURE() << op << " accepted " << dtypeName(other);
    } catch (const UnsupportedOpError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("typed"), std::string::npos) << msg;
      EXPECT_NE(msg.find(dtypeName(other)), std::string::npos) << msg;
    }
    return;
  }
  GTEST_SKIP() << "no registered op restricts its input dtype";
}

}  // namespace
}  // namespace npuc
