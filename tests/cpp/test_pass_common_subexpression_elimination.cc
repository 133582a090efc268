// common_subexpression_elimination: duplicate nodes (operands in any order after canonicalize,
// constants compared by value) are computed once; different attributes, constants or inputs are
// not merged; duplicate graph outputs keep their names.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassCse, MergesDuplicatesWithEqualConstants) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* c1 = b.constant(Tensor::fromVector<float>({1.f, 2.f, 3.f}));
  Value* c2 = b.constant(Tensor::fromVector<float>({1.f, 2.f, 3.f}));  // same value, another constant
  Value* a = b.op("Mul", {x, c1});
  Value* d = b.op("Mul", {x, c2});
  Value* ra = b.op("Relu", {a});
  Value* rd = b.op("Relu", {d});  // becomes a duplicate once the Muls merge
  b.output(b.op("Add", {ra, rd}));
  auto r = runPassChecked(b.graph(), "common_subexpression_elimination", 0.0);
  EXPECT_EQ(r.changes, 3u);  // one constant, one Mul, one Relu
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Relu"), 1u);
}

TEST(PassCse, DifferentAttributesConstantsOrInputsStay) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* y = b.input("y", {2, 3});
  Value* s0 = b.op("Softmax", {x}, attrs({{"axis", int64_t{0}}}));
  Value* s1 = b.op("Softmax", {x}, attrs({{"axis", int64_t{1}}}));
  Value* m1 = b.op("Mul", {x, b.constant(Tensor::fromVector<float>({1.f, 2.f, 3.f}))});
  Value* m2 = b.op("Mul", {x, b.constant(Tensor::fromVector<float>({1.f, 2.f, 4.f}))});
  Value* r1 = b.op("Relu", {x});
  Value* r2 = b.op("Relu", {y});
  b.output(b.op("Sum", {s0, s1, m1, m2, r1, r2}));
  EXPECT_EQ(runPassChecked(b.graph(), "common_subexpression_elimination").changes, 0u);
}

TEST(PassCse, CommutedDuplicatesMergeAfterCanonicalize) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* y = b.input("y", {4});
  Value* a = b.op("Add", {x, y});
  Value* c =
      b.op("Add", {y, x});  // x+y spelled the other way round: not merged (no canonical order of variables)
  Value* m1 = b.op("Mul", {b.scalar(2.0f), a});
  Value* m2 = b.op("Mul", {a, b.scalar(2.0f)});  // merges once canonicalize puts the constant last
  b.output(b.op("Sum", {c, m1, m2}));
  runPassChecked(b.graph(), "canonicalize", 0.0);
  auto r = runPassChecked(b.graph(), "common_subexpression_elimination", 0.0);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Add"), 2u);
  EXPECT_GE(r.changes, 1u);
}

TEST(PassCse, DuplicateGraphOutputsKeepTheirNames) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* a = b.op("Relu", {x});
  Value* d = b.op("Relu", {x});
  a->setName("a");
  d->setName("d");
  b.output(a);
  b.output(d);
  auto r = runPassChecked(b.graph(), "common_subexpression_elimination");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("graph outputs"));
  EXPECT_EQ(b.graph().outputs()[0]->name(), "a");
  EXPECT_EQ(b.graph().outputs()[1]->name(), "d");
}

TEST(PassCse, DuplicateFeedingAGraphOutputIsMerged) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* a = b.op("Exp", {x});
  Value* d = b.op("Exp", {x});
  b.output(b.op("Neg", {a}));
  b.output(d);
  const std::string name = d->name();
  EXPECT_EQ(runPassChecked(b.graph(), "common_subexpression_elimination", 0.0).changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Exp"), 1u);
  EXPECT_EQ(b.graph().outputs()[1]->name(), name);
}

}  // namespace
}  // namespace npuc
