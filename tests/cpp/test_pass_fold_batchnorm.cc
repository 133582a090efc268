// fold_batchnorm: BatchNormalization and per-channel Mul/Add folded into Conv (plain, grouped,
// depthwise), ConvTranspose (grouped weight layout [Cin, Cout/g, k...]), Gemm (transB, C shapes,
// alpha/beta) and MatMul; differential checks within 1e-5; negative cases.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

Value* batchNorm(GraphBuilder& b, Value* x, int64_t channels, uint32_t seed, const std::string& name = "") {
  return b.op("BatchNormalization",
              {x, b.randomConstant({channels}, seed, 0.5f, 1.5f), b.randomConstant({channels}, seed + 1),
               b.randomConstant({channels}, seed + 2), b.randomConstant({channels}, seed + 3, 0.2f, 2.0f)},
              attrs({{"epsilon", 1e-3f}}), name);
}

void expectFolded(Graph& g, const std::string& linear_op, size_t expected_nodes) {
  auto r = runPassChecked(g, "fold_batchnorm", 1e-5);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(g, "BatchNormalization"), 0u);
  EXPECT_EQ(countOps(g, linear_op), 1u);
  EXPECT_EQ(g.numNodes(), expected_nodes);
}

struct ConvCase {
  int64_t cin, cout, group;
  bool bias;
};
void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << "cin=" << c.cin << " cout=" << c.cout << " group=" << c.group << (c.bias ? " bias" : "");
}

class PassFoldBatchNormConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(PassFoldBatchNormConv, IntoConv) {
  const ConvCase c = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {2, c.cin, 6, 6});
  std::vector<Value*> ins = {x, b.randomConstant({c.cout, c.cin / c.group, 3, 3}, 11)};
  if (c.bias) ins.push_back(b.randomConstant({c.cout}, 12));
  Value* conv = b.op("Conv", ins, attrs({{"group", c.group}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  b.output(batchNorm(b, conv, c.cout, 20));
  expectFolded(b.graph(), "Conv", 1);
  EXPECT_EQ(b.graph().firstNode()->numInputs(), 3u);  // a bias now exists
}

TEST_P(PassFoldBatchNormConv, IntoConvTranspose) {
  const ConvCase c = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {1, c.cin, 4, 5});
  std::vector<Value*> ins = {x, b.randomConstant({c.cin, c.cout / c.group, 3, 2}, 13)};
  if (c.bias) ins.push_back(b.randomConstant({c.cout}, 14));
  Value* deconv =
      b.op("ConvTranspose", ins, attrs({{"group", c.group}, {"strides", std::vector<int64_t>{2, 1}}}));
  b.output(batchNorm(b, deconv, c.cout, 30));
  expectFolded(b.graph(), "ConvTranspose", 1);
}

INSTANTIATE_TEST_SUITE_P(Layouts, PassFoldBatchNormConv,
                         ::testing::Values(ConvCase{3, 5, 1, true}, ConvCase{4, 6, 2, false},
                                           ConvCase{4, 4, 4, true} /* depthwise */,
                                           ConvCase{6, 12, 3, true}));

TEST(PassFoldBatchNorm, IntoGemmWithTransBAndBiasShapes) {
  for (int trans_b = 0; trans_b < 2; ++trans_b) {
    for (const Shape& c_shape : {Shape{}, Shape{6}, Shape{1, 6}, Shape{4, 6}, Shape{4, 1}}) {
      GraphBuilder b;
      Value* a = b.input("a", {4, 5});
      Value* w = b.randomConstant(trans_b ? Shape{6, 5} : Shape{5, 6}, 3);
      std::vector<Value*> ins = {a, w};
      if (!c_shape.empty()) ins.push_back(b.randomConstant(c_shape, 4));
      Value* gemm = b.op("Gemm", ins, attrs({{"transB", int64_t{trans_b}}, {"alpha", 0.7f}, {"beta", 1.3f}}));
      b.output(batchNorm(b, gemm, 6, 40));
      SCOPED_TRACE("transB=" + std::to_string(trans_b) + " C=" + shapeStr(c_shape));
      expectFolded(b.graph(), "Gemm", 1);
    }
  }
}

TEST(PassFoldBatchNorm, IntoMatMulAddsBiasAdd) {
  GraphBuilder b;
  Value* a = b.input("a", {3, 5});
  Value* mm = b.op("MatMul", {a, b.randomConstant({5, 4}, 5)});
  b.output(batchNorm(b, mm, 4, 50));
  expectFolded(b.graph(), "MatMul", 2);
  EXPECT_EQ(countOps(b.graph(), "Add"), 1u);
}

TEST(PassFoldBatchNorm, ChannelMulAndAddIntoConvCommuted) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 5, 5});
  Value* conv = b.op("Conv", {x, b.randomConstant({4, 2, 1, 1}, 6)}, attrs({{"group", int64_t{2}}}));
  Value* mul = b.op("Mul", {b.randomConstant({4, 1, 1}, 7), conv});  // constant on the left
  Value* add = b.op("Add", {mul, b.randomConstant({1, 4, 1, 1}, 8)});
  Value* scl = b.op("Mul", {add, b.scalar(0.5f)});  // a scalar is per-channel too
  b.output(scl);
  auto r = runPassChecked(b.graph(), "fold_batchnorm", 1e-5);
  EXPECT_EQ(r.changes, 3u);
  EXPECT_EQ(b.graph().numNodes(), 1u);
}

TEST(PassFoldBatchNorm, ChannelMulIntoBatchedMatMul) {
  GraphBuilder b;
  Value* a = b.input("a", {2, 3, 5});
  Value* mm = b.op("MatMul", {a, b.randomConstant({5, 4}, 9)});
  Value* add = b.op("Add", {mm, b.randomConstant({4}, 10)});  // canonical bias: stays
  b.output(b.op("Mul", {b.op("MatMul", {a, b.randomConstant({5, 4}, 11)}), b.randomConstant({4}, 12)}));
  b.output(add);
  auto r = runPassChecked(b.graph(), "fold_batchnorm", 1e-5);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 0u);
  EXPECT_EQ(countOps(b.graph(), "Add"), 1u);
}

TEST(PassFoldBatchNorm, ConvOutputWithTwoUsersIsNotFolded) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* conv = b.op("Conv", {x, b.randomConstant({2, 3, 1, 1}, 1)});
  b.output(batchNorm(b, conv, 2, 60));
  b.output(b.op("Relu", {conv}));
  auto r = runPassChecked(b.graph(), "fold_batchnorm");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("2 users"));
}

TEST(PassFoldBatchNorm, ConvOutputThatIsAGraphOutputIsNotFolded) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* conv = b.op("Conv", {x, b.randomConstant({2, 3, 1, 1}, 1)});
  b.output(batchNorm(b, conv, 2, 60));
  b.output(conv);
  auto r = runPassChecked(b.graph(), "fold_batchnorm");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("graph output"));
}

TEST(PassFoldBatchNorm, NonPerChannelConstantsAndVariableWeightsAreNotFolded) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* w = b.input("w", {2, 3, 1, 1});
  Value* c1 = b.op("Conv", {x, b.randomConstant({2, 3, 1, 1}, 1)});
  Value* spatial = b.op("Mul", {c1, b.randomConstant({1, 1, 4, 1}, 2)});  // varies along H
  Value* c2 = b.op("Conv", {x, w});                                       // weights are an input
  Value* scaled = b.op("Mul", {c2, b.randomConstant({2, 1, 1}, 3)});
  b.output(spatial);
  b.output(scaled);
  auto r = runPassChecked(b.graph(), "fold_batchnorm");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("is not per-channel"));
  EXPECT_TRUE(r.failedWith("not a float32 constant"));
}

TEST(PassFoldBatchNorm, OnlyAtLevel3ThroughThePassManager) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  b.output(batchNorm(b, b.op("Conv", {x, b.randomConstant({2, 3, 1, 1}, 1)}), 2, 70));
  PassManagerOptions o;
  o.optimization_level = 2;
  PassManager pm(o);
  pm.addStage("rewrite", {"fold_batchnorm"});
  EXPECT_EQ(pm.run(b.graph()).changesBy("fold_batchnorm"), 0u);
  EXPECT_EQ(countOps(b.graph(), "BatchNormalization"), 1u);
}

}  // namespace
}  // namespace npuc
