// transpose_reorder: unary activations move above a Transpose (the Clip of Conv -> Transpose ->
// Clip ends right after the Conv), binary ops with a constant operand take the Transpose along
// with a permuted constant (either operand position), and a Transpose with other users stays.
// Bit-exact, so the differential check uses a zero tolerance.
#include "opset/registry.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};

TEST(PassTransposeReorder, ClipMovesRightAfterTheConv) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 5, 6});
  Node* conv = b.node("Conv", {x, b.randomConstant({8, 4, 3, 3}, 1)},
                      attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "conv");
  Value* t = b.op("Transpose", {conv->output()}, attrs({{"perm", kToNhwc}}));
  Value* y = b.op("Clip", {t, b.scalar(0.0f), b.scalar(6.0f)});
  y->setName("y");
  b.output(y);
  auto r = runPassChecked(b.graph(), "transpose_reorder", 0.0);
  EXPECT_EQ(r.changes, 1u);
  ASSERT_EQ(conv->output()->uses().size(), 1u);
  EXPECT_EQ(conv->output()->uses()[0].user->opType(), "Clip");
  EXPECT_EQ(b.graph().outputs()[0]->producer()->opType(), "Transpose");
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
}

TEST(PassTransposeReorder, ChainsOfUnaryOpsAllMove) {
  GraphBuilder b;
  Value* t = b.op("Transpose", {b.input("x", {2, 3, 4})}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  Value* a = b.op("LeakyRelu", {t}, attrs({{"alpha", 0.2f}}));
  Value* s = b.op("Sigmoid", {b.op("Neg", {a})});
  b.output(s);
  auto r = runPassChecked(b.graph(), "transpose_reorder", 0.0);
  EXPECT_EQ(r.changes, 3u);
  EXPECT_EQ(b.graph().lastNode()->opType(), "Transpose");
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 1u);
}

TEST(PassTransposeReorder, BinaryWithConstantTakesAPermutedConstant) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4, 5});
  Value* t = b.op("Transpose", {x}, attrs({{"perm", kToNhwc}}));       // [2,4,5,3]
  Value* add = b.op("Add", {t, b.randomConstant({3}, 2)});             // per-channel
  Value* sub = b.op("Sub", {b.randomConstant({5, 1}, 3), add});        // constant first
  Value* mul = b.op("Mul", {sub, b.randomConstant({1, 4, 5, 3}, 4)});  // full-rank
  b.output(b.op("Transpose", {mul}, attrs({{"perm", std::vector<int64_t>{0, 3, 1, 2}}})));
  auto r = runPassChecked(b.graph(), "transpose_reorder", 0.0);
  EXPECT_EQ(r.changes, 3u);
  // The two Transposes are now adjacent, ready for compose_transposes to cancel them.
  Node* last = b.graph().lastNode();
  ASSERT_EQ(last->opType(), "Transpose");
  EXPECT_EQ(last->input(0)->producer()->opType(), "Transpose");
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 2u);
}

TEST(PassTransposeReorder, TransposeWithOtherUsersStays) {
  GraphBuilder b;
  Value* t = b.op("Transpose", {b.input("x", {2, 3})}, attrs({{"perm", std::vector<int64_t>{1, 0}}}), "t");
  b.output(b.op("Relu", {t}, {}, "relu"));
  b.output(b.op("Tanh", {t}));
  Value* t2 = b.op("Transpose", {b.input("z", {2, 3})}, attrs({{"perm", std::vector<int64_t>{1, 0}}}), "t2");
  b.output(b.op("Abs", {t2}));
  b.output(t2);
  Value* t3 = b.op("Transpose", {b.input("w", {2, 3})}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  b.output(b.op("Add", {t3, b.randomConstant({4, 3, 2}, 5)}));  // the constant broadcasts up
  auto r = runPassChecked(b.graph(), "transpose_reorder", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("Transpose 't' is not moved below 'relu': its output has other users"));
  EXPECT_TRUE(r.failedWith("Transpose 't2' is not moved"));
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 3u);
}

}  // namespace
}  // namespace npuc
