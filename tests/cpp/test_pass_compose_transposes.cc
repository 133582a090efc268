// compose_transposes: chains compose (p[i] = p1[p2[i]]), identity results vanish, guards hold.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

Value* transpose(GraphBuilder& b, Value* x, std::vector<int64_t> perm) {
  return b.op("Transpose", {x}, attrs({{"perm", perm}}));
}

TEST(PassComposeTransposes, ChainComposes) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4, 5});
  Value* v = transpose(b, b.op("Relu", {x}), {0, 2, 3, 1});  // NCHW -> NHWC
  v = transpose(b, v, {3, 1, 0, 2});
  v = transpose(b, v, {1, 0, 3, 2});
  b.output(v);
  auto r = runPassChecked(b.graph(), "compose_transposes", 0.0);
  EXPECT_EQ(r.changes, 2u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 1u);
}

TEST(PassComposeTransposes, InversePairVanishes) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4, 5});
  Value* relu = b.op("Relu", {x});
  Value* v = transpose(b, transpose(b, relu, {0, 2, 3, 1}), {0, 3, 1, 2});
  b.output(b.op("Neg", {v}));
  auto r = runPassChecked(b.graph(), "compose_transposes", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 0u);
  EXPECT_EQ(b.graph().lastNode()->input(0), relu);
}

TEST(PassComposeTransposes, DefaultPermIsReversal) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* v = b.op("Transpose", {b.op("Transpose", {b.op("Exp", {x})})});
  b.output(b.op("Neg", {v}));
  EXPECT_EQ(runPassChecked(b.graph(), "compose_transposes", 0.0).changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 0u);
}

TEST(PassComposeTransposes, IdentityOnGraphInputToOutputStays) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  b.output(transpose(b, transpose(b, x, {1, 0}), {1, 0}));
  auto r = runPassChecked(b.graph(), "compose_transposes");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("graph output"));
}

TEST(PassComposeTransposes, SharedInnerTransposeIsNotDuplicated) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* t1 = transpose(b, x, {1, 2, 0});
  b.output(transpose(b, t1, {2, 0, 1}));
  b.output(b.op("Relu", {t1}));
  auto r = runPassChecked(b.graph(), "compose_transposes");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("2 users"));
}

}  // namespace
}  // namespace npuc
