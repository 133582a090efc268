// merge_reshapes: Reshape/Squeeze/Unsqueeze/Flatten chains become one Reshape with a constant
// shape; interior values with other consumers or that are graph outputs stop the merge.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassMergeReshapes, MixedChainBecomesOneReshape) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* v = b.op("Relu", {x});
  v = b.op("Unsqueeze", {v, b.int64s({0})});                // [1,2,3,4]
  v = b.op("Flatten", {v}, attrs({{"axis", int64_t{2}}}));  // [2,12]
  v = b.op("Reshape", {v, b.int64s({-1, 6})});              // [4,6]
  v = b.op("Unsqueeze", {v, b.int64s({1})});                // [4,1,6]
  v = b.op("Squeeze", {v, b.int64s({1})});                  // [4,6]
  v = b.op("Reshape", {v, b.int64s({0, 2, 3})});            // [4,2,3]
  b.output(v);
  auto r = runPassChecked(b.graph(), "merge_reshapes", 0.0);
  EXPECT_EQ(r.changes, 5u);
  EXPECT_EQ(countOps(b.graph(), "Reshape"), 1u);
  EXPECT_EQ(b.graph().numNodes(), 2u);
  const Node* reshape = b.graph().lastNode();
  EXPECT_EQ(reshape->input(0)->producer()->opType(), "Relu");
  EXPECT_EQ(*constantInts(reshape->input(1)), (std::vector<int64_t>{4, 2, 3}));
}

TEST(PassMergeReshapes, SingleReshapeIsLeftAlone) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  b.output(b.op("Reshape", {x, b.int64s({3, 2})}));
  EXPECT_EQ(runPassChecked(b.graph(), "merge_reshapes").changes, 0u);
}

// A view of a view reads the same bytes: the outer one reads x directly and the inner one stays for
// its other reader (no work is duplicated, and propagate_reshapes relies on this to cancel views).
TEST(PassMergeReshapes, InteriorWithSecondUserStaysForIt) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* r1 = b.op("Reshape", {x, b.int64s({6})});
  Value* r2 = b.op("Reshape", {r1, b.int64s({3, 2})});
  b.output(r2);
  b.output(b.op("Neg", {r1}));
  auto r = runPassChecked(b.graph(), "merge_reshapes");
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Reshape"), 2u);
  const Value* out = b.graph().outputs()[0];
  EXPECT_EQ(out->producer()->input(0), x) << "the outer view reads x";
  EXPECT_EQ(out->shape(), (Shape{3, 2}));
  EXPECT_TRUE(r1->hasUses()) << "the inner view stays for Neg";
}

TEST(PassMergeReshapes, InteriorGraphOutputStaysAnOutput) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* u = b.op("Unsqueeze", {x, b.int64s({0})});
  Value* r1 = b.op("Squeeze", {u, b.int64s({0})});
  b.output(r1);
  b.output(u);
  auto r = runPassChecked(b.graph(), "merge_reshapes");
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(b.graph().outputs()[0]->producer()->input(0), x);
  EXPECT_EQ(b.graph().outputs()[1], u) << "the Unsqueeze is still the second output";
}

TEST(PassMergeReshapes, ZeroSizedDimsKeepTheirMeaning) {
  // A literal 0 in a Reshape shape means "copy the input dim" unless allowzero=1.
  GraphBuilder b;
  Value* x = b.input("x", {0, 3});
  Value* v = b.op("Reshape", {x, b.int64s({3, 0})}, attrs({{"allowzero", int64_t{1}}}));
  v = b.op("Unsqueeze", {v, b.int64s({0})});
  b.output(v);
  auto r = runPassChecked(b.graph(), "merge_reshapes", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(b.graph().lastNode()->attrs().i("allowzero", 0), 1);
  EXPECT_EQ(b.graph().lastNode()->output()->shape(), (Shape{1, 3, 0}));
}

}  // namespace
}  // namespace npuc
