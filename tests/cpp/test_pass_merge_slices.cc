// merge_slices: consecutive Slices on disjoint axes, on the same axis (with positive and negative
// steps, clamping and negative indices) merge into one exact Slice; guards hold.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

Value* slice(GraphBuilder& b, Value* x, const SliceSpec& s) {
  return b.op("Slice", {x, b.int64s(s.starts), b.int64s(s.ends), b.int64s(s.axes), b.int64s(s.steps)});
}

void expectMerged(const SliceSpec& first, const SliceSpec& second) {
  GraphBuilder b;
  Value* x = b.input("x", {7, 9, 5});
  Value* v = slice(b, slice(b, b.op("Relu", {x}), first), second);
  b.output(b.op("Neg", {v}));
  auto r = runPassChecked(b.graph(), "merge_slices", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 1u);
}

TEST(PassMergeSlices, DisjointAxes) {
  expectMerged({{1}, {6}, {0}, {1}}, {{2}, {-1}, {2}, {2}});
}

TEST(PassMergeSlices, SameAxisPositiveSteps) {
  expectMerged({{1}, {9}, {1}, {2}}, {{1}, {100}, {1}, {2}});
}

TEST(PassMergeSlices, SameAxisNegativeSteps) {
  expectMerged({{-1}, {-100}, {1}, {-1}}, {{0}, {5}, {1}, {2}});  // reverse, then every other of 5
  expectMerged({{0}, {9}, {1}, {2}}, {{-1}, {-100}, {1}, {-1}});  // every other, then reverse to index 0
  expectMerged({{8}, {0}, {1}, {-3}}, {{1}, {0}, {1}, {-1}});
}

TEST(PassMergeSlices, MixedAxesNegativeIndicesAndClamping) {
  expectMerged({{-5, 1}, {1000, -1}, {0, 2}, {1, 1}}, {{-2, 0, 1}, {100, 2, 8}, {0, 2, 1}, {1, 1, 3}});
}

TEST(PassMergeSlices, InteriorWithTwoUsersStays) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 6});
  Value* s1 = slice(b, x, {{1}, {5}, {0}, {1}});
  b.output(slice(b, s1, {{1}, {3}, {0}, {1}}));
  b.output(b.op("Relu", {s1}));
  auto r = runPassChecked(b.graph(), "merge_slices");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("2 users"));
}

TEST(PassMergeSlices, InteriorGraphOutputStays) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 6});
  Value* s1 = slice(b, x, {{1}, {5}, {0}, {1}});
  b.output(slice(b, s1, {{0}, {2}, {1}, {1}}));
  b.output(s1);
  EXPECT_TRUE(runPassChecked(b.graph(), "merge_slices").failedWith("graph output"));
}

TEST(PassMergeSlices, VariableParametersStay) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 6});
  Value* starts = b.input("starts", {1}, DType::Int64);
  Value* s1 = b.op("Slice", {x, b.int64s({1}), b.int64s({5})});
  Node* s2 = b.graph().appendNode("Slice", {s1, starts, b.int64s({3})}, 1);
  s2->output()->setType(DType::Float32, {-1, 6});  // data-dependent size
  b.output(s2->output());
  PassContext ctx;
  EXPECT_EQ(createPass("merge_slices")->run(b.graph(), ctx), 0u);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 2u);
}

}  // namespace
}  // namespace npuc
