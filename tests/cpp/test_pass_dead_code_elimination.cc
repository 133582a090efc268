// dead_code_elimination: dead chains and unused constants go; outputs, their producers and graph
// inputs stay; a clean graph costs nothing.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassDeadCodeElimination, RemovesDeadChainsAndConstants) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* unused = b.input("unused", {4});
  b.op("Exp", {b.op("Add", {x, b.randomConstant({4}, 1)})});  // dead chain with a constant
  b.randomConstant({8}, 2);                                   // dead constant
  b.output(b.op("Relu", {x}));
  const size_t values_before = b.graph().numValues();
  auto r = runPassChecked(b.graph(), "dead_code_elimination", 0.0);
  EXPECT_EQ(r.changes, 4u);  // two nodes, two constants
  EXPECT_EQ(b.graph().numNodes(), 1u);
  EXPECT_EQ(b.graph().numValues(), values_before - 4);  // two constants, two node outputs
  EXPECT_EQ(b.graph().inputs().size(), 2u);
  EXPECT_EQ(b.graph().inputs()[1], unused);
}

TEST(PassDeadCodeElimination, KeepsEverythingThatReachesAnOutput) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* a = b.op("Relu", {x});
  b.output(b.op("Neg", {a}));
  b.output(a);  // an interior value that is also an output
  EXPECT_EQ(runPassChecked(b.graph(), "dead_code_elimination").changes, 0u);
  EXPECT_EQ(b.graph().numNodes(), 2u);
}

TEST(PassDeadCodeElimination, MultiOutputNodeWithOneUsedOutputStays) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 2});
  Node* split = b.node("Split", {x}, passtest::attrs({{"axis", int64_t{1}}}), "split", 2);
  b.output(b.op("Neg", {split->output(0)}));
  EXPECT_EQ(runPassChecked(b.graph(), "dead_code_elimination").changes, 0u);
  EXPECT_EQ(b.graph().numNodes(), 2u);
}

}  // namespace
}  // namespace npuc
