// fuse_matmul_bias: MatMul by a constant matrix + constant bias Add -> Gemm (with Reshapes for
// rank > 2), bias on either side of the Add and as [N] or [1, 1, N]; refused for a shared MatMul
// result, an activation or per-row "bias", an Add that broadcasts the result, and below level 3.
// Every case is differential against the original graph.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

constexpr double kGemmTolerance = 1e-5;

struct BiasCase {
  Shape input;
  Shape bias;
  bool bias_first;  // Add(b, MatMul) as PyTorch exports nn.Linear
};

class PassFuseMatMulBias : public ::testing::TestWithParam<BiasCase> {};

TEST_P(PassFuseMatMulBias, BecomesOneGemm) {
  const BiasCase c = GetParam();
  constexpr int64_t kDepth = 6, kColumns = 5;
  GraphBuilder b;
  Shape in = c.input;
  in.push_back(kDepth);
  Value* x = b.op("Relu", {b.input("x", in)});
  Value* mm = b.op("MatMul", {x, b.randomConstant({kDepth, kColumns}, 1)});
  Value* bias = b.randomConstant(c.bias, 2);
  b.output(c.bias_first ? b.op("Add", {bias, mm}) : b.op("Add", {mm, bias}));
  auto r = runPassChecked(b.graph(), "fuse_matmul_bias", kGemmTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Gemm"), 1u) << b.graph().dump();
  EXPECT_EQ(countOps(b.graph(), "MatMul"), 0u);
  EXPECT_EQ(countOps(b.graph(), "Add"), 0u);
  EXPECT_EQ(countOps(b.graph(), "Reshape"), in.size() == 2 ? 0u : 2u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PassFuseMatMulBias,
                         ::testing::Values(BiasCase{{4}, {5}, false}, BiasCase{{1, 7}, {5}, true},
                                           BiasCase{{2, 3}, {1, 1, 5}, false},
                                           BiasCase{{2, 2, 3}, {5}, true}));

TEST(PassFuseMatMulBiasRefuses, SharedMatMulResult) {
  GraphBuilder b;
  Value* mm = b.op("MatMul", {b.input("x", {3, 4}), b.randomConstant({4, 2}, 1)});
  b.output(b.op("Add", {mm, b.randomConstant({2}, 2)}));
  b.output(b.op("Relu", {mm}));
  auto r = runPassChecked(b.graph(), "fuse_matmul_bias");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("not fused"));
}

TEST(PassFuseMatMulBiasRefuses, BiasThatIsNotAlongTheLastAxis) {
  GraphBuilder b;
  Value* mm = b.op("MatMul", {b.input("x", {3, 4}), b.randomConstant({4, 2}, 1)});
  b.output(b.op("Add", {mm, b.randomConstant({3, 1}, 2)}));  // one value per row
  EXPECT_EQ(runPassChecked(b.graph(), "fuse_matmul_bias").changes, 0u);
}

TEST(PassFuseMatMulBiasRefuses, ActivationOperandOrWeights) {
  GraphBuilder b;
  Value* mm = b.op("MatMul", {b.input("x", {3, 4}), b.randomConstant({4, 2}, 1)});
  b.output(b.op("Add", {mm, b.input("b", {2})}));
  Value* mm2 = b.op("MatMul", {b.input("y", {3, 4}), b.input("w", {4, 2})});
  b.output(b.op("Add", {mm2, b.randomConstant({2}, 3)}));
  EXPECT_EQ(runPassChecked(b.graph(), "fuse_matmul_bias").changes, 0u);
}

TEST(PassFuseMatMulBiasRefuses, AddThatBroadcastsTheResult) {
  GraphBuilder b;
  Value* mm = b.op("MatMul", {b.input("x", {3, 4}), b.randomConstant({4, 2}, 1)});
  b.output(b.op("Add", {mm, b.randomConstant({1, 1, 2}, 2)}));  // the result becomes [1, 3, 2]
  EXPECT_EQ(runPassChecked(b.graph(), "fuse_matmul_bias").changes, 0u);
}

TEST(PassFuseMatMulBiasRefuses, BelowLevelThree) {
  GraphBuilder b;
  Value* mm = b.op("MatMul", {b.input("x", {3, 4}), b.randomConstant({4, 2}, 1)});
  b.output(b.op("Add", {mm, b.randomConstant({2}, 2)}));
  EXPECT_EQ(runPassChecked(b.graph(), "fuse_matmul_bias", 0.0, 2).changes, 0u);
}

}  // namespace
}  // namespace npuc
