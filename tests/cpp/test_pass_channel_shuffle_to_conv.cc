// channel_shuffle_to_conv: a Reshape-Transpose-Reshape channel shuffle leaves the graph. Consumers
// that are group-1 Convs absorb the permutation into their weights; a channel Slice that gathers
// a strided set of the unshuffled tensor becomes a strided Slice of it; the ShuffleNetV2 halves
// become a covering Slice folded into the branch Conv and a 1x1 gather Conv; anything else reads
// one permutation Conv. Refusals: a Transpose that is no group swap, a Reshape that does not split
// the channels, interior values with other users. Every case is differential.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

// Folding reorders the Conv's sum over input channels: not bit-exact, but close.
constexpr double kShuffleTolerance = 1e-5;

// y = shuffle of x [n, c, h, w] in `groups` groups, built as exporters write it.
Value* shuffle(GraphBuilder& b, Value* x, int64_t groups, const std::string& name = "shuffle",
               std::vector<int64_t> perm = {0, 2, 1, 3, 4}) {
  const Shape& s = x->shape();
  Value* split = b.op("Reshape", {x, b.int64s({s[0], groups, s[1] / groups, s[2], s[3]})});
  Value* t = b.op("Transpose", {split}, attrs({{"perm", perm}}));
  return b.op("Reshape", {t, b.int64s({s[0], s[1], s[2], s[3]})}, {}, name);
}

Value* channelSlice(GraphBuilder& b, Value* x, int64_t start, int64_t end, int64_t step = 1) {
  return b.op("Slice", {x, b.int64s({start}), b.int64s({end}), b.int64s({1}), b.int64s({step})});
}

Value* conv(GraphBuilder& b, Value* x, int64_t out_ch, int64_t k, uint32_t seed, int64_t group = 1) {
  const int64_t in_ch = x->shape()[1] / group;
  const int64_t pad = k / 2;
  return b.op("Conv",
              {x, b.randomConstant({out_ch, in_ch, k, k}, seed), b.randomConstant({out_ch}, seed + 1)},
              attrs({{"group", group}, {"pads", std::vector<int64_t>{pad, pad, pad, pad}}}));
}

size_t shuffleOps(const Graph& g) {
  return countOps(g, "Reshape") + countOps(g, "Transpose");
}

const Node* producerOf(const Graph& g, const std::string& op) {
  for (const Node* n : g.nodes()) {
    if (n->opType() == op) return n;
  }
  return nullptr;
}

struct FoldCase {
  int64_t channels, groups, kernel;
};

class PassChannelShuffleFold : public ::testing::TestWithParam<FoldCase> {};

TEST_P(PassChannelShuffleFold, ConvConsumersAbsorbThePermutation) {
  const FoldCase c = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {2, c.channels, 5, 6});
  Value* y = shuffle(b, x, c.groups);
  b.output(conv(b, y, 7, c.kernel, 1));
  b.output(conv(b, y, 3, 1, 5));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", kShuffleTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(shuffleOps(b.graph()), 0u) << b.graph().dump();
  EXPECT_EQ(b.graph().numNodes(), 2u) << "no new op: " << b.graph().dump();
  for (const Node* n : b.graph().nodes()) EXPECT_EQ(n->input(0), x);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PassChannelShuffleFold,
                         ::testing::Values(FoldCase{8, 2, 1}, FoldCase{12, 3, 3}, FoldCase{12, 4, 1},
                                           FoldCase{6, 6, 3}));

TEST(PassChannelShuffle, StridedSliceOfTheShuffleIsAStridedSliceOfTheInput) {
  // Shuffle of 2 groups of 4: y[0::2] = x[0:4] and y[1::2] = x[4:8], no arithmetic left.
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 3, 3});
  Value* y = shuffle(b, x, 2);
  b.output(b.op("Relu", {channelSlice(b, y, 0, 8, 2)}));
  b.output(b.op("Neg", {channelSlice(b, y, 1, 8, 2)}));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", 0.0, /*level=*/1);  // bit-exact
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(shuffleOps(b.graph()), 0u);
  EXPECT_EQ(countOps(b.graph(), "Conv"), 0u);
  ASSERT_EQ(countOps(b.graph(), "Slice"), 2u);
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() != "Slice") continue;
    EXPECT_EQ(n->input(0), x);
    EXPECT_EQ(constantInts(n->input(4)), std::vector<int64_t>{1}) << "contiguous halves of x";
  }
}

TEST(PassChannelShuffle, ShuffleNetHalvesBecomeACoveringSliceAndAGatherConv) {
  // ShuffleNetV2: y = shuffle(x, 2); the first half goes on to a Concat, the second to a 1x1 Conv.
  // y[0:4] reads x channels {0, 4, 1, 5}; y[4:8] reads {2, 6, 3, 7}, covered by x[2:8].
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  Value* y = shuffle(b, x, 2);
  Value* branch = b.op("Relu", {conv(b, channelSlice(b, y, 4, 8), 4, 1, 3)});
  b.output(b.op("Concat", {channelSlice(b, y, 0, 4), branch}, attrs({{"axis", int64_t{1}}})));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", kShuffleTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(shuffleOps(b.graph()), 0u) << b.graph().dump();
  EXPECT_EQ(countOps(b.graph(), "Conv"), 2u) << "the branch Conv and one gather Conv";
  const Node* cover = producerOf(b.graph(), "Slice");
  ASSERT_TRUE(cover);
  EXPECT_EQ(cover->input(0), x);
  EXPECT_EQ(cover->output()->shape()[1], 6) << "x[2:8]";
}

TEST(PassChannelShuffle, OtherConsumersAndAGraphOutputReadAPermutationConv) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 6, 3, 5});
  Value* y = shuffle(b, x, 3);
  const std::string y_name = y->name();
  b.output(y);
  b.output(conv(b, y, 6, 3, 7, /*group=*/6));  // depthwise: cannot absorb the permutation
  b.output(conv(b, y, 4, 1, 9));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", kShuffleTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(shuffleOps(b.graph()), 0u);
  ASSERT_EQ(countOps(b.graph(), "Conv"), 3u) << "depthwise, folded 1x1 and one permutation Conv";
  EXPECT_EQ(b.graph().outputs()[0]->producer()->opType(), "Conv");
  EXPECT_EQ(b.graph().outputs()[0]->name(), y_name);
}

TEST(PassChannelShuffle, DepthwiseConvCarriesThePermutationToTheNextConv) {
  // ShuffleNetV2 downsampling block: depthwise Conv -> 1x1 Conv on one branch, 1x1 Conv on the other.
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 6, 6});
  Value* y = shuffle(b, x, 2);
  b.output(conv(b, conv(b, y, 8, 3, 11, /*group=*/8), 5, 1, 13));
  b.output(conv(b, y, 3, 1, 15));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", kShuffleTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(shuffleOps(b.graph()), 0u);
  EXPECT_EQ(b.graph().numNodes(), 3u) << "no new op: " << b.graph().dump();
}

TEST(PassChannelShuffleRefusals, NotAGroupSwap) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  b.output(conv(b, shuffle(b, x, 2, "swap_hw", {0, 1, 2, 4, 3}), 4, 1, 1));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(
      r.failedWith("Reshape-Transpose-Reshape at 'swap_hw' is not a channel shuffle: the Transpose "
                   "does not swap the group axes"));
}

TEST(PassChannelShuffleRefusals, ReshapeThatDoesNotSplitTheChannels) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  Value* split = b.op("Reshape", {x, b.int64s({1, 2, 4, 2, 8})});  // folds H into the last axes
  Value* t = b.op("Transpose", {split}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}));
  b.output(b.op("Reshape", {t, b.int64s({1, 8, 4, 4})}, {}, "not_channels"));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(
      r.failedWith("at 'not_channels' is not a channel shuffle: the first Reshape does not split the "
                   "channels"));
}

TEST(PassChannelShuffleRefusals, InteriorValuesWithOtherUsers) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  Value* split = b.op("Reshape", {x, b.int64s({1, 2, 4, 4, 4})});
  Value* t = b.op("Transpose", {split}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}));
  b.output(b.op("Reshape", {t, b.int64s({1, 8, 4, 4})}));
  b.output(t);  // the 5-D tensor is itself an output
  Value* z = b.input("z", {1, 8, 4, 4});
  Value* split2 = b.op("Reshape", {z, b.int64s({1, 2, 4, 4, 4})});
  Value* t2 = b.op("Transpose", {split2}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}));
  b.output(b.op("Reshape", {t2, b.int64s({1, 8, 4, 4})}));
  b.output(b.op("Neg", {split2}));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("is a graph output"));
  EXPECT_TRUE(r.failedWith("has 2 users"));
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 2u);
}

TEST(PassChannelShuffleRefusals, BelowLevelThreeNothingChanges) {
  GraphBuilder b;
  b.output(conv(b, shuffle(b, b.input("x", {1, 4, 2, 2}), 2), 3, 1, 2));
  auto r = runPassChecked(b.graph(), "channel_shuffle_to_conv", 0.0, /*level=*/2);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 1u);
}

}  // namespace
}  // namespace npuc
