// canonicalize: each canonical form, its negative cases, and a differential check of every rewrite.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassCanonicalize, ConstantsMoveRightOfCommutativeOps) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* c = b.randomConstant({3}, 7);
  Value* add = b.op("Add", {c, x}, {}, "add");
  Value* mul = b.op("Mul", {b.scalar(3.0f), add}, {}, "mul");
  Value* mx = b.op("Max", {mul, b.scalar(0.0f)}, {}, "max");  // already canonical
  b.output(mx);
  auto r = runPassChecked(b.graph(), "canonicalize", 0.0);
  EXPECT_EQ(r.changes, 2u);
  for (const char* name : {"add", "mul", "max"}) {
    const Node* n = b.graph().findNode(name);
    EXPECT_FALSE(n->input(0)->isConstant()) << name;
    EXPECT_TRUE(n->input(1)->isConstant()) << name;
  }
}

TEST(PassCanonicalize, NonCommutativeOperandsStay) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* s = b.op("Sub", {b.scalar(1.0f), x}, {}, "sub");
  b.output(s);
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize").changes, 0u);
  EXPECT_TRUE(b.graph().findNode("sub")->input(0)->isConstant());
}

TEST(PassCanonicalize, PowSquareBecomesMul) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 5});
  Value* p = b.op("Pow", {x, b.scalar(2.0f)});
  Value* q = b.op("Pow", {x, b.scalar(3.0f)});  // not a square: stays
  b.output(b.op("Add", {p, q}));
  auto r = runPassChecked(b.graph(), "canonicalize", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Pow"), 1u);
  const Node* mul = nullptr;
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() == "Mul") mul = n;
  }
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->input(0), x);
  EXPECT_EQ(mul->input(1), x);
}

TEST(PassCanonicalize, PowWithBroadcastingExponentStays) {
  // A [1,1,1] exponent raises the rank; Mul(x, x) would not.
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* p = b.op("Pow", {x, b.constant(Tensor::fromVector<float>({2.0f}, {1, 1, 1}))});
  b.output(p);
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize").changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "Pow"), 1u);
}

TEST(PassCanonicalize, DivOneIsReciprocalAndRsqrtFormIsKept) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 4});
  Value* sq = b.op("Sqrt", {b.op("Abs", {x})});
  Value* inv = b.op("Div", {b.scalar(1.0f), sq});
  Value* y = b.op("Div", {x, sq});  // x / sqrt(.) stays a Div (exact passes only)
  b.output(b.op("Add", {inv, y}));
  auto r = runPassChecked(b.graph(), "canonicalize", 0.0, /*level=*/2);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Reciprocal"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Div"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Sqrt"), 1u);
}

TEST(PassCanonicalize, DivByConstantBecomesMulOnlyAtLevel3) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* c = b.randomConstant({3}, 3, 0.5f, 2.0f);
  b.output(b.op("Div", {x, c}));
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize", 1e-6, 1).changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "Div"), 1u);
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize", 1e-6, 3).changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Div"), 0u);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
}

TEST(PassCanonicalize, ReduceAxesNormalized) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* r1 = b.op("ReduceSum", {x, b.int64s({-1, 0})}, attrs({{"keepdims", int64_t{1}}}), "r1");
  Value* r2 = b.op("ReduceMean", {x}, attrs({{"keepdims", int64_t{0}}}), "r2");  // empty axes: all
  Value* r3 = b.op("ReduceMax", {x, b.int64s({1})}, {}, "r3");                   // canonical already
  b.output(r1);
  b.output(r2);
  b.output(r3);
  auto r = runPassChecked(b.graph(), "canonicalize", 0.0);
  EXPECT_EQ(r.changes, 2u);
  EXPECT_EQ(*constantInts(b.graph().findNode("r1")->input(1)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(*constantInts(b.graph().findNode("r2")->input(1)), (std::vector<int64_t>{0, 1, 2}));
}

TEST(PassCanonicalize, ReduceWithNoAxesAndNoopFlagIsRemoved) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* e = b.op("Exp", {x});
  Value* r = b.op("ReduceSum", {e}, attrs({{"noop_with_empty_axes", int64_t{1}}}));
  b.output(b.op("Neg", {r}));
  auto run = runPassChecked(b.graph(), "canonicalize", 0.0);
  EXPECT_EQ(run.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "ReduceSum"), 0u);
}

TEST(PassCanonicalize, NegativeAxisAttributesBecomePositive) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* s = b.op("Softmax", {x}, attrs({{"axis", int64_t{-1}}}), "softmax");
  Value* c = b.op("Concat", {s, x}, attrs({{"axis", int64_t{-2}}}), "concat");
  b.output(c);
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize", 0.0).changes, 2u);
  EXPECT_EQ(b.graph().findNode("softmax")->attrs().i("axis"), 1);
  EXPECT_EQ(b.graph().findNode("concat")->attrs().i("axis"), 0);
}

TEST(PassCanonicalize, NoOpsAreRemoved) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* v = b.op("Relu", {x});
  v = b.op("Identity", {v});
  v = b.op("Cast", {v}, attrs({{"to", int64_t{1}}}));
  v = b.op("Dropout", {v});
  v = b.op("Expand", {v, b.int64s({2, 3, 4})});
  v = b.op("Reshape", {v, b.int64s({2, 3, 4})});
  v = b.op("Transpose", {v}, attrs({{"perm", std::vector<int64_t>{0, 1, 2}}}));
  v = b.op("Slice", {v, b.int64s({0}), b.int64s({100}), b.int64s({1})});
  v = b.op("Concat", {v}, attrs({{"axis", int64_t{0}}}));
  v = b.op("Neg", {v});
  b.output(v);
  auto r = runPassChecked(b.graph(), "canonicalize", 0.0);
  EXPECT_EQ(r.changes, 8u);
  EXPECT_EQ(b.graph().numNodes(), 2u);  // Relu, Neg
}

TEST(PassCanonicalize, OpsThatDoSomethingStay) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* v = b.op("Cast", {x}, attrs({{"to", int64_t{10}}}));  // float -> float16
  v = b.op("Cast", {v}, attrs({{"to", int64_t{1}}}));
  v = b.op("Expand", {v, b.int64s({2, 2, 3, 4})});                            // new leading dim
  v = b.op("Reshape", {v, b.int64s({4, 12})});                                // new shape
  v = b.op("Transpose", {v}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));  // real permutation
  v = b.op("Slice", {v, b.int64s({1}), b.int64s({100}), b.int64s({0})});      // drops a row
  v = b.op("Slice", {v, b.int64s({-1}), b.int64s({-100}), b.int64s({1}), b.int64s({-1})});  // reverses
  b.output(v);
  const size_t before = b.graph().numNodes();
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize", 0.0).changes, 0u);
  EXPECT_EQ(b.graph().numNodes(), before);
}

TEST(PassCanonicalize, NoOpOnGraphInputFeedingGraphOutputStays) {
  // Removing the Identity would make the output the input itself and lose the output name.
  GraphBuilder b;
  Value* x = b.input("x", {3});
  Value* y = b.op("Identity", {x}, {}, "id");
  y->setName("y");
  b.output(y);
  auto r = runPassChecked(b.graph(), "canonicalize");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("graph output"));
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
}

TEST(PassCanonicalize, NoOpBeforeGraphOutputHandsOverTheName) {
  GraphBuilder b;
  Value* x = b.input("x", {3});
  Value* r = b.op("Relu", {x});
  Value* y = b.op("Identity", {r});
  y->setName("y");
  b.output(y);
  EXPECT_EQ(runPassChecked(b.graph(), "canonicalize").changes, 1u);
  EXPECT_EQ(b.graph().outputs()[0], r);
  EXPECT_EQ(r->name(), "y");
}

TEST(PassCanonicalize, TrainingDropoutAndUsedMaskStay) {
  GraphBuilder b;
  Value* x = b.input("x", {3});
  Node* d = b.node("Dropout", {x}, {}, "drop", 2);
  b.output(b.op("Neg", {d->output(0)}));
  b.output(d->output(1));  // the mask is used
  PassContext ctx;
  EXPECT_EQ(createPass("canonicalize")->run(b.graph(), ctx), 0u);
  EXPECT_EQ(countOps(b.graph(), "Dropout"), 1u);
}

}  // namespace
}  // namespace npuc

namespace npuc {
namespace {

// A Transpose that moves only axes of size 1 is a Reshape (bit-exact); one that moves a real axis
// stays a Transpose.
TEST(PassCanonicalize, TransposeOfUnitAxesIsAReshape) {
  for (const auto& [perm, becomes_reshape] :
       std::vector<std::pair<std::vector<int64_t>, bool>>{{{1, 0, 2}, true}, {{0, 2, 1}, false}}) {
    passtest::GraphBuilder b;
    Value* x = b.input("x", {1, 6, 5});
    b.output(b.op("Transpose", {x}, passtest::attrs({{"perm", perm}})));
    passtest::runPassChecked(b.graph(), "canonicalize", 0.0);
    EXPECT_EQ(passtest::countOps(b.graph(), "Reshape"), becomes_reshape ? 1u : 0u);
    EXPECT_EQ(passtest::countOps(b.graph(), "Transpose"), becomes_reshape ? 0u : 1u);
  }
}

}  // namespace
}  // namespace npuc
