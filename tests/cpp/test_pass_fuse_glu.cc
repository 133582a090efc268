// fuse_glu: Split halves (split input, attribute or equal split; any axis, negative too) and the
// two-Slice form, Mul operands in either order, fuse to ai.npuc GLU; unequal or swapped halves,
// shared halves and a half that is a graph output are refused. Every case is differential.
#include "opset/registry.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

constexpr double kGluTolerance = 1e-6;

struct SplitCase {
  int64_t axis;
  bool split_input;    // sizes as the `split` input, else the equal split of two outputs
  bool sigmoid_first;  // Mul(Sigmoid(b), a)
};

class PassFuseGluSplit : public ::testing::TestWithParam<SplitCase> {};

TEST_P(PassFuseGluSplit, FusesToGlu) {
  const SplitCase c = GetParam();
  GraphBuilder b;
  Value* x = b.op("Relu", {b.input("x", {2, 6, 4, 8})});
  const int64_t axis = c.axis < 0 ? c.axis + 4 : c.axis;
  const int64_t half = x->shape()[static_cast<size_t>(axis)] / 2;
  std::vector<Value*> ins = {x};
  if (c.split_input) ins.push_back(b.int64s({half, half}));
  Node* split = b.node("Split", ins, attrs({{"axis", c.axis}}), "split", 2);
  Value* gate = b.op("Sigmoid", {split->output(1)});
  b.output(c.sigmoid_first ? b.op("Mul", {gate, split->output(0)}) : b.op("Mul", {split->output(0), gate}));
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance);
  EXPECT_EQ(r.changes, 1u);
  ASSERT_EQ(b.graph().numNodes(), 2u) << b.graph().dump();
  const Node* glu = b.graph().lastNode();
  EXPECT_EQ(glu->opType(), "GLU");
  EXPECT_EQ(glu->domain(), kNpucDomain);
  EXPECT_EQ(glu->attrs().i("axis"), axis);
}

INSTANTIATE_TEST_SUITE_P(Axes, PassFuseGluSplit,
                         ::testing::Values(SplitCase{1, true, false}, SplitCase{1, false, true},
                                           SplitCase{3, true, true}, SplitCase{-1, false, false},
                                           SplitCase{2, true, false}, SplitCase{0, false, false}));

TEST(PassFuseGlu, TwoSliceForm) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 10});
  Value* a = b.op("Slice", {x, b.int64s({0}), b.int64s({5}), b.int64s({-1})});
  Value* g = b.op("Slice", {x, b.int64s({5}), b.int64s({INT64_MAX}), b.int64s({1}), b.int64s({1})});
  b.output(b.op("Mul", {b.op("Sigmoid", {g}), a}));
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(b.graph().numNodes(), 1u);
  EXPECT_EQ(b.graph().firstNode()->attrs().i("axis"), 1);
}

// rk3588's NPU runs Slice, Sigmoid and Mul but has no GLU: fusing would put one CPU op and two
// hand-overs where the NPU ran everything, so with that target the fusion is refused, saying why.
TEST(PassFuseGluRefusals, NotForATargetWhoseNpuRunsThePartsButNotGlu) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  Value* a = b.op("Slice", {x, b.int64s({0}), b.int64s({4}), b.int64s({1})});
  Value* g = b.op("Slice", {x, b.int64s({4}), b.int64s({8}), b.int64s({1})});
  b.output(b.op("Mul", {a, b.op("Sigmoid", {g})}));
  const PassTarget t = passtest::rk3588Target();
  ASSERT_EQ(passtest::cpuNodeCount(b.graph(), t), 0u);
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance, 3, t);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("rk3588's NPU runs the 4 ops it would replace but not GLU"));
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), t), 0u);
  EXPECT_EQ(runPassChecked(b.graph(), "fuse_glu", kGluTolerance).changes, 1u) << "without a target it fuses";
}

TEST(PassFuseGluRefusals, SwappedHalvesAreADifferentFunction) {
  GraphBuilder b;
  Node* sp = b.node("Split", {b.input("y", {2, 6})}, attrs({{"axis", int64_t{1}}}), "sp", 2);
  b.output(b.op("Mul", {sp->output(1), b.op("Sigmoid", {sp->output(0)})}));  // b * sigmoid(a)
  Value* x = b.input("x", {3, 10});
  Value* lo = b.op("Slice", {x, b.int64s({0}), b.int64s({5}), b.int64s({1})});
  Value* hi = b.op("Slice", {x, b.int64s({5}), b.int64s({10}), b.int64s({1})});
  b.output(b.op("Mul", {hi, b.op("Sigmoid", {lo})}));
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "GLU"), 0u);
}

TEST(PassFuseGluRefusals, UnequalSplitIsReported) {
  // [2, 3] split into [2, 2] and [2, 1]; the product broadcasts, but it is no GLU.
  GraphBuilder b;
  Node* s = b.node("Split", {b.input("x", {2, 3}), b.int64s({2, 1})}, attrs({{"axis", int64_t{1}}}), "sp", 2);
  b.output(b.op("Mul", {s->output(0), b.op("Sigmoid", {s->output(1)})}, {}, "m"));
  Value* x = b.input("z", {3, 10});
  Value* lo = b.op("Slice", {x, b.int64s({0}), b.int64s({4}), b.int64s({1})});
  Value* hi = b.op("Slice", {x, b.int64s({6}), b.int64s({10}), b.int64s({1})});
  b.output(b.op("Mul", {lo, b.op("Sigmoid", {hi})}, {}, "m2"));
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(
      r.failedWith("GLU at node 'm' not fused: Split 'sp' does not cut its input into two equal halves"));
  EXPECT_TRUE(r.failedWith("GLU at node 'm2' not fused: Slices"));
}

TEST(PassFuseGluRefusals, HalfWithTwoUsersOrAsGraphOutput) {
  GraphBuilder b;
  Node* sp = b.node("Split", {b.input("x", {2, 6})}, attrs({{"axis", int64_t{1}}}), "sp", 2);
  b.output(b.op("Mul", {sp->output(0), b.op("Sigmoid", {sp->output(1)})}, {}, "m1"));
  b.output(b.op("Neg", {sp->output(0)}));
  Node* sp2 = b.node("Split", {b.input("y", {2, 6})}, attrs({{"axis", int64_t{1}}}), "sp2", 2);
  Value* gate = b.op("Sigmoid", {sp2->output(1)});
  b.output(b.op("Mul", {sp2->output(0), gate}, {}, "m2"));
  b.output(gate);
  auto r = runPassChecked(b.graph(), "fuse_glu", kGluTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("GLU at node 'm1' not fused: interior value"));
  EXPECT_TRUE(r.failedWith("has 2 users"));
  EXPECT_TRUE(r.failedWith("GLU at node 'm2' not fused: interior value"));
  EXPECT_TRUE(r.failedWith("is a graph output"));
}

}  // namespace
}  // namespace npuc
