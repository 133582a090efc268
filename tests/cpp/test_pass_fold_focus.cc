// fold_focus: four strided Slices of x + Concat (any block order, chained single-axis Slices or one
// two-axis Slice) followed by a group-1 Conv become one Conv on x (kernel 2d(k-1)+2, stride 2s,
// pads 2p); without such a Conv (or below level 3) they become SpaceToDepth plus, when the block
// order differs from ONNX's, a Gather. Refusals: repeated offsets, Slices of different tensors,
// a Concat that is also a graph output. Every case is differential.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

// The folded Conv sums the same products in another order.
constexpr double kFocusConvTolerance = 1e-5;

struct Offset {
  int64_t dy, dx;
};
const std::vector<Offset> kYoloOrder = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
const std::vector<Offset> kSpaceToDepthOrder = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

// x[:, :, dy::2, dx::2], as YOLOv5 exports it (two single-axis Slices) or as one Slice.
Value* strided(GraphBuilder& b, Value* x, Offset o, bool chained) {
  const int64_t big = INT64_MAX;
  if (!chained)
    return b.op("Slice",
                {x, b.int64s({o.dy, o.dx}), b.int64s({big, big}), b.int64s({2, 3}), b.int64s({2, 2})});
  Value* rows = b.op("Slice", {x, b.int64s({o.dy}), b.int64s({big}), b.int64s({2}), b.int64s({2})});
  return b.op("Slice", {rows, b.int64s({o.dx}), b.int64s({big}), b.int64s({3}), b.int64s({2})});
}

Value* focus(GraphBuilder& b, Value* x, const std::vector<Offset>& order, bool chained = true,
             const std::string& name = "focus") {
  std::vector<Value*> parts;
  for (const Offset& o : order) parts.push_back(strided(b, x, o, chained));
  return b.op("Concat", parts, attrs({{"axis", int64_t{1}}}), name);
}

struct ConvCase {
  int64_t kernel, stride, dilation;
  std::vector<int64_t> pads;
  bool chained;
};

class PassFoldFocusConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(PassFoldFocusConv, BecomesOneConvOnTheInput) {
  const ConvCase c = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 12, 16});
  Value* t = focus(b, x, kYoloOrder, c.chained);
  const int64_t k = c.kernel;
  Value* y = b.op("Conv", {t, b.randomConstant({5, 12, k, k}, 3), b.randomConstant({5}, 4)},
                  attrs({{"strides", std::vector<int64_t>{c.stride, c.stride}},
                         {"dilations", std::vector<int64_t>{c.dilation, c.dilation}},
                         {"pads", c.pads}}),
                  "conv");
  b.output(b.op("Relu", {y}));
  auto r = runPassChecked(b.graph(), "fold_focus", kFocusConvTolerance);
  EXPECT_EQ(r.changes, 1u);
  ASSERT_EQ(b.graph().numNodes(), 2u) << b.graph().dump();
  const Node* conv = b.graph().firstNode();
  EXPECT_EQ(conv->input(0), x);
  const int64_t k2 = 2 * c.dilation * (k - 1) + 2;
  EXPECT_EQ(conv->input(1)->shape(), (Shape{5, 3, k2, k2}));
  EXPECT_EQ(conv->attrs().ints("strides"), (std::vector<int64_t>{2 * c.stride, 2 * c.stride}));
}

INSTANTIATE_TEST_SUITE_P(Geometry, PassFoldFocusConv,
                         ::testing::Values(ConvCase{3, 1, 1, {1, 1, 1, 1}, true},
                                           ConvCase{3, 2, 1, {0, 1, 1, 0}, false},
                                           ConvCase{1, 1, 1, {0, 0, 0, 0}, true},
                                           ConvCase{3, 1, 2, {2, 2, 2, 2}, true},
                                           ConvCase{2, 3, 1, {1, 0, 0, 1}, false}));

TEST(PassFoldFocus, OnnxBlockOrderIsJustSpaceToDepth) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 6, 4});
  b.output(b.op("Relu", {focus(b, x, kSpaceToDepthOrder, false)}));
  auto r = runPassChecked(b.graph(), "fold_focus", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Gather"), 0u);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
}

TEST(PassFoldFocus, OtherOrdersGatherTheBlocksIntoPlace) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 8});
  Value* t = focus(b, x, kYoloOrder, true);
  const std::string t_name = t->name();
  b.output(t);  // the Concat is a graph output itself
  b.output(b.op("Tanh", {focus(b, b.input("z", {1, 1, 2, 2}), {{1, 1}, {0, 1}, {1, 0}, {0, 0}}, false)}));
  auto r = runPassChecked(b.graph(), "fold_focus", 0.0);
  EXPECT_EQ(r.changes, 2u);
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 2u);
  EXPECT_EQ(countOps(b.graph(), "Gather"), 2u);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
  EXPECT_EQ(b.graph().outputs()[0]->name(), t_name);
}

TEST(PassFoldFocus, GroupedConvOrLevelTwoKeepTheConv) {
  for (int level : {2, 3}) {
    SCOPED_TRACE(level);
    GraphBuilder b;
    Value* t = focus(b, b.input("x", {1, 2, 4, 4}), kYoloOrder);
    const int64_t group = level == 3 ? 2 : 1;  // at level 2 even a plain Conv keeps its input
    b.output(b.op("Conv", {t, b.randomConstant({4, 8 / group, 3, 3}, 1)},
                  attrs({{"group", group}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})));
    auto r = runPassChecked(b.graph(), "fold_focus", 0.0, level);
    EXPECT_EQ(r.changes, 1u);
    EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 1u);
    EXPECT_EQ(countOps(b.graph(), "Conv"), 1u);
    if (level == 3) EXPECT_TRUE(r.failedWith("not folded: the Conv is grouped"));
  }
}

TEST(PassFoldFocusRefusals, RepeatedOffsetsOrDifferentTensors) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  b.output(focus(b, x, {{0, 0}, {1, 0}, {0, 1}, {0, 0}}, true, "repeated"));
  Value* z = b.input("z", {1, 2, 4, 4});
  b.output(b.op("Concat",
                {strided(b, x, {0, 0}, false), strided(b, z, {1, 0}, false), strided(b, x, {0, 1}, false),
                 strided(b, x, {1, 1}, false)},
                attrs({{"axis", int64_t{1}}}), "mixed"));
  auto r = runPassChecked(b.graph(), "fold_focus", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("Concat 'repeated' is not a Focus: two inputs take the same offset"));
  EXPECT_TRUE(r.failedWith("Concat 'mixed' is not a Focus: the Slices cut different tensors"));
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 0u);
}

TEST(PassFoldFocusRefusals, ConcatThatIsAGraphOutputIsNotFoldedIntoTheConv) {
  GraphBuilder b;
  Value* t = focus(b, b.input("x", {1, 2, 4, 4}), kYoloOrder, true, "t");
  const std::string t_name = t->name();  // t itself is replaced
  b.output(t);
  b.output(b.op("Conv", {t, b.randomConstant({4, 8, 1, 1}, 1)}, {}, "conv"));
  auto r = runPassChecked(b.graph(), "fold_focus", 0.0);
  EXPECT_TRUE(
      r.failedWith("Focus into Conv 'conv' not folded: interior value '" + t_name + "' is a graph output"));
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 1u) << "the Concat itself still becomes SpaceToDepth";
  EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
}

}  // namespace
}  // namespace npuc
