// constant_folding: chains of constant-only nodes fold (bit-exactly), Shape of a static tensor
// folds, the size cap is honoured and reported, and graph outputs keep their names.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassConstantFolding, FoldsConstantChains) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* c = b.op("Mul", {b.randomConstant({3}, 1), b.scalar(2.0f)});
  c = b.op("Add", {c, b.randomConstant({3}, 2)});
  c = b.op("Exp", {c});
  Value* y = b.op("Mul", {x, c});
  b.output(y);
  auto r = runPassChecked(b.graph(), "constant_folding", 0.0);
  EXPECT_EQ(r.changes, 3u);
  EXPECT_EQ(b.graph().numNodes(), 1u);
  EXPECT_TRUE(b.graph().firstNode()->input(1)->isConstant());
}

TEST(PassConstantFolding, ShapeOfStaticTensorFolds) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* s = b.op("Shape", {x});
  Value* dims = b.op("Add", {s, b.int64s({1, 1, 1})});  // folds in the same sweep
  b.output(b.op("Relu", {x}));
  b.output(dims);
  EXPECT_EQ(runPassChecked(b.graph(), "constant_folding", 0.0).changes, 2u);
  EXPECT_EQ(countOps(b.graph(), "Shape"), 0u);
  EXPECT_EQ(b.graph().numNodes(), 1u);
  EXPECT_EQ(*constantInts(b.graph().outputs()[1]), (std::vector<int64_t>{3, 4, 5}));
}

TEST(PassConstantFolding, NodesWithVariableInputsStay) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  b.output(b.op("Add", {x, b.scalar(1.0f)}));
  EXPECT_EQ(runPassChecked(b.graph(), "constant_folding").changes, 0u);
  EXPECT_EQ(b.graph().numNodes(), 1u);
}

TEST(PassConstantFolding, SizeCapIsHonouredAndReported) {
  GraphBuilder b;
  Value* x = b.input("x", {64, 64});
  Value* big = b.op("Expand", {b.scalar(1.0f), b.int64s({64, 64})});  // 16 KiB
  b.output(b.op("Add", {x, big}));
  PassContext ctx;
  ctx.current_pass = "constant_folding";
  ctx.fold_limit_bytes = 1024;
  EXPECT_EQ(createPass("constant_folding")->run(b.graph(), ctx), 0u);
  ASSERT_EQ(ctx.match_failures.size(), 1u);
  EXPECT_NE(ctx.match_failures[0].reason.find("fold limit"), std::string::npos);
  ctx.fold_limit_bytes = 1 << 20;
  EXPECT_EQ(createPass("constant_folding")->run(b.graph(), ctx), 1u);
  EXPECT_EQ(countOps(b.graph(), "Expand"), 0u);
}

TEST(PassConstantFolding, FoldedGraphOutputKeepsItsName) {
  GraphBuilder b;
  Value* x = b.input("x", {2});
  b.output(b.op("Neg", {x}));
  Value* c = b.op("Add", {b.scalar(1.0f), b.scalar(2.0f)});
  c->setName("three");
  b.output(c);
  auto r = runPassChecked(b.graph(), "constant_folding", 0.0);
  EXPECT_EQ(r.changes, 1u);
  const Value* out = b.graph().outputs()[1];
  EXPECT_EQ(out->name(), "three");
  ASSERT_TRUE(out->isConstant());
  EXPECT_EQ(out->constant().doubleAt(0), 3.0);
}

}  // namespace
}  // namespace npuc
