// fold_channel_permutations: a region of channel data movement (shuffles, channel Slices, Splits,
// Gathers, Concats) between Convs becomes one Split per producing Conv and one Concat per
// consuming Conv, with the permutations in the Convs' weights. Every case is differential
// (runPassChecked); the ShuffleNet-like graph also checks that no gather Conv is left, that MACs
// do not grow and that fewer data-movement nodes remain than channel_shuffle_to_conv leaves.
// Refusals: a region value that is a graph output, a producer that cannot reorder its channels,
// a consumer that cannot absorb an order.
#include "frontend/onnx_import.h"
#include "opset/macs.h"
#include "pass_test_util.h"
#include "passes/optimize.h"
#include "reference_npz.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

// Sink Convs sum their input channels in another order: not bit-exact, but close.
constexpr double kTolerance = 1e-5;

Value* shuffle(GraphBuilder& b, Value* x, int64_t groups) {
  const Shape& s = x->shape();
  Value* split = b.op("Reshape", {x, b.int64s({s[0], groups, s[1] / groups, s[2], s[3]})});
  Value* t = b.op("Transpose", {split}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}));
  return b.op("Reshape", {t, b.int64s({s[0], s[1], s[2], s[3]})});
}

Value* channelSlice(GraphBuilder& b, Value* x, int64_t start, int64_t end) {
  return b.op("Slice", {x, b.int64s({start}), b.int64s({end}), b.int64s({1}), b.int64s({1})});
}

Value* conv(GraphBuilder& b, Value* x, int64_t out_ch, int64_t k, uint32_t seed, int64_t group = 1,
            int64_t stride = 1) {
  const int64_t pad = k / 2;
  return b.op("Conv",
              {x, b.randomConstant({out_ch, x->shape()[1] / group, k, k}, seed),
               b.randomConstant({out_ch}, seed + 1)},
              attrs({{"group", group},
                     {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                     {"strides", std::vector<int64_t>{stride, stride}}}));
}

Value* concat(GraphBuilder& b, const std::vector<Value*>& parts) {
  return b.op("Concat", parts, attrs({{"axis", int64_t{1}}}));
}

Value* relu(GraphBuilder& b, Value* x) {
  return b.op("Relu", {x});
}

// ShuffleNetV2 stride-1 block on `c` channels: halves, 1x1 -> depthwise 3x3 -> 1x1 on the second.
Value* block(GraphBuilder& b, Value* x, uint32_t seed) {
  const int64_t c = x->shape()[1], h = c / 2;
  Value* branch = relu(b, conv(b, channelSlice(b, x, h, c), h, 1, seed));
  branch = relu(b, conv(b, conv(b, branch, h, 3, seed + 2, h), h, 1, seed + 4));
  return shuffle(b, concat(b, {channelSlice(b, x, 0, h), branch}), 2);
}

// ShuffleNetV2 downsampling block: both branches read all of x, stride 2, `out` channels.
Value* downsample(GraphBuilder& b, Value* x, int64_t out, uint32_t seed) {
  const int64_t c = x->shape()[1], h = out / 2;
  Value* left = relu(b, conv(b, conv(b, x, c, 3, seed, c, 2), h, 1, seed + 2));
  Value* right = relu(b, conv(b, x, h, 1, seed + 4));
  right = relu(b, conv(b, conv(b, right, h, 3, seed + 6, h, 2), h, 1, seed + 8));
  return shuffle(b, concat(b, {left, right}), 2);
}

// stem -> [downsample, block, block, block] -> [downsample, block] -> 1x1 Conv.
void buildShuffleNet(GraphBuilder& b) {
  Value* x = relu(b, conv(b, b.input("x", {1, 3, 16, 16}), 8, 3, 1));
  x = downsample(b, x, 16, 10);
  for (uint32_t i = 0; i < 3; ++i) x = block(b, x, 20 + 10 * i);
  x = downsample(b, x, 32, 60);
  x = block(b, x, 70);
  b.output(conv(b, x, 24, 1, 90));
}

// A 1x1 Conv without bias whose weight rows each hold a single 1 and zeros: a channel gather.
bool isGatherConv(const Node& n) {
  if (n.opType() != "Conv" || n.input(2) || !n.input(1)->isConstant()) return false;
  const Tensor& w = n.input(1)->constant();
  if (w.numel() != w.dim(0) * w.dim(1)) return false;
  for (int64_t o = 0; o < w.dim(0); ++o) {
    int ones = 0;
    for (int64_t i = 0; i < w.dim(1); ++i) {
      const float v = w.data<float>()[o * w.dim(1) + i];
      if (v != 0.0f && v != 1.0f) return false;
      ones += v == 1.0f;
    }
    if (ones != 1) return false;
  }
  return true;
}

size_t gatherConvs(const Graph& g) {
  size_t n = 0;
  for (const Node* node : g.nodes()) n += isGatherConv(*node);
  return n;
}

std::string failures(const passtest::PassRun& r) {
  std::string text;
  for (const MatchFailure& f : r.ctx.match_failures) text += f.reason + "\n";
  return text;
}

int64_t totalMacs(const Graph& g) {
  int64_t macs = 0;
  for (const Node* n : g.nodes()) macs += nodeMacs(*n);
  return macs;
}

size_t dataMovementNodes(const Graph& g) {
  size_t n = 0;
  for (const char* op : {"Reshape", "Transpose", "Slice", "Split", "Concat", "Gather"}) n += countOps(g, op);
  return n;
}

TEST(PassFoldChannelPermutations, ShuffleNetLeavesNoShuffleNoGatherConvAndNoExtraMacs) {
  GraphBuilder b;
  buildShuffleNet(b);
  auto with_shuffle_pass = b.graph().clone();
  const int64_t macs_before = totalMacs(b.graph());
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  const Graph& g = b.graph();
  EXPECT_EQ(r.changes, 2u) << "one region per stage\n" << failures(r);
  EXPECT_EQ(countOps(g, "Reshape") + countOps(g, "Transpose") + countOps(g, "Slice"), 0u) << g.dump();
  EXPECT_EQ(gatherConvs(g), 0u) << g.dump();
  EXPECT_EQ(totalMacs(g), macs_before);
  // Stage 1: the two downsampling branches and blocks 1, 2 split by exit block (4 Splits), one
  // Concat per branch input (3) and the one the next downsampling block reads. Stage 2: two
  // Splits (downsampling branches), the block's Concat and conv5's.
  EXPECT_EQ(countOps(g, "Split"), 6u) << g.dump();
  EXPECT_EQ(countOps(g, "Concat"), 6u) << g.dump();

  // channel_shuffle_to_conv on the same graph keeps one gather Conv per stride-1 block.
  auto s = runPassChecked(*with_shuffle_pass, "channel_shuffle_to_conv", kTolerance);
  EXPECT_EQ(gatherConvs(*with_shuffle_pass), 4u);
  EXPECT_GT(totalMacs(*with_shuffle_pass), macs_before);
  EXPECT_EQ(dataMovementNodes(g), 12u);
  EXPECT_EQ(dataMovementNodes(*with_shuffle_pass), 10u) << "4 covering Slices and 6 Concats";
}

TEST(PassFoldChannelPermutations, IsIdempotent) {
  GraphBuilder b;
  buildShuffleNet(b);
  runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  auto again = runPassChecked(b.graph(), "fold_channel_permutations", 0.0);
  EXPECT_EQ(again.changes, 0u);
}

TEST(PassFoldChannelPermutations, GatherPermutationFoldsIntoProducerAndConsumer) {
  // Any permutation, not only a shuffle: Gather(Relu(Conv(x)), perm) -> Conv, nothing in between.
  GraphBuilder b;
  Value* x = b.input("x", {1, 5, 4, 4});
  Value* y = relu(b, conv(b, x, 6, 3, 3));
  Value* p = b.op("Gather", {y, b.int64s({4, 0, 5, 2, 1, 3})}, attrs({{"axis", int64_t{1}}}));
  b.output(conv(b, p, 7, 1, 5));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u) << failures(r);
  EXPECT_EQ(dataMovementNodes(b.graph()), 0u) << b.graph().dump();
  EXPECT_EQ(countOps(b.graph(), "Conv"), 2u);
}

TEST(PassFoldChannelPermutations, BothHalvesOfASourceJoinTheRegion) {
  // The first ShuffleNet unit after a stem: both Slices of the stem's output are region steps (the
  // second one is no consumer that must absorb an order), so the stem Conv is split instead.
  GraphBuilder b;
  Value* stem = relu(b, conv(b, b.input("x", {1, 3, 6, 6}), 8, 3, 3));
  Value* branch = relu(b, conv(b, channelSlice(b, stem, 4, 8), 4, 1, 5));
  b.output(conv(b, shuffle(b, concat(b, {channelSlice(b, stem, 0, 4), branch}), 2), 5, 1, 7));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u) << failures(r);
  EXPECT_EQ(countOps(b.graph(), "Split"), 1u) << b.graph().dump();
  EXPECT_EQ(dataMovementNodes(b.graph()), 2u) << "Split of the stem, Concat for the last Conv";
}

struct HeadCase {
  int64_t trans_b;
};

class PassFoldChannelPermutationsHead : public ::testing::TestWithParam<HeadCase> {};

TEST_P(PassFoldChannelPermutationsHead, PoolingFlattenLayerNormGemmTakeTheOrder) {
  // The demo model's head: GlobalAveragePool -> Flatten -> LayerNorm -> Gemm passes the shuffle's
  // order on (LayerNorm's scale and bias move) to the Gemm's B; a MaxPool -> Conv path too.
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* s = shuffle(b, concat(b, {relu(b, conv(b, x, 4, 1, 3)), conv(b, x, 4, 3, 5)}), 2);
  Value* flat = b.op("Flatten", {b.op("GlobalAveragePool", {s})}, attrs({{"axis", int64_t{1}}}));
  Value* ln = b.op("LayerNormalization", {flat, b.randomConstant({8}, 7), b.randomConstant({8}, 8)},
                   attrs({{"axis", int64_t{1}}}));
  const int64_t trans_b = GetParam().trans_b;
  Value* w = b.randomConstant(trans_b ? Shape{5, 8} : Shape{8, 5}, 9);
  b.output(b.op("Gemm", {ln, w, b.randomConstant({5}, 10)}, attrs({{"transB", trans_b}})));
  b.output(conv(b, b.op("MaxPool", {s}, attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}})), 3, 1, 11));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u) << failures(r);
  EXPECT_EQ(countOps(b.graph(), "Reshape") + countOps(b.graph(), "Transpose"), 0u) << b.graph().dump();
  EXPECT_EQ(dataMovementNodes(b.graph()), 1u) << "the Concat both heads read";
}

INSTANTIATE_TEST_SUITE_P(TransB, PassFoldChannelPermutationsHead,
                         ::testing::Values(HeadCase{0}, HeadCase{1}));

TEST(PassFoldChannelPermutations, NpucActivationsAreCopiedWithTheirDomain) {
  // The demo model's stem: Conv -> x * Sigmoid(x), fused to ai.npuc SiLU, then split in halves.
  GraphBuilder b;
  Value* c = conv(b, b.input("x", {1, 3, 6, 6}), 8, 3, 3);
  Value* stem = b.op("Mul", {c, b.op("Sigmoid", {c})});
  Value* branch = relu(b, conv(b, channelSlice(b, stem, 4, 8), 4, 1, 5));
  b.output(conv(b, shuffle(b, concat(b, {channelSlice(b, stem, 0, 4), branch}), 2), 5, 1, 7));
  PassContext ctx;
  ASSERT_EQ(createPass("fuse_activations")->run(b.graph(), ctx), 1u);
  ASSERT_EQ(countOps(b.graph(), "SiLU"), 1u);
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u) << failures(r);
  ASSERT_EQ(countOps(b.graph(), "SiLU"), 1u) << b.graph().dump();
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() == "SiLU") EXPECT_EQ(n->domain(), kNpucDomain);
  }
}

TEST(PassFoldChannelPermutations, SharedConcatPrecedesItsFirstReader) {
  // K reads the same channels as X, and comes first; X is rewired before the other sinks because
  // its output re-enters the region (it is also a source), so their Concat goes before K.
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 5, 5});
  Value* s = shuffle(b, concat(b, {conv(b, x, 4, 1, 3), conv(b, x, 4, 1, 5)}), 2);
  b.output(conv(b, s, 3, 1, 7));               // K
  Value* back = relu(b, conv(b, s, 4, 1, 9));  // X
  b.output(conv(b, shuffle(b, concat(b, {back, channelSlice(b, s, 0, 4)}), 2), 2, 1, 11));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u) << failures(r);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 0u) << b.graph().dump();
}

TEST(PassFoldChannelPermutations, UnreadChannelsLeaveTheProducer) {
  // A Slice drops channels: the producing Conv loses those rows (fewer MACs), no Slice left.
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 4, 4});
  Value* y = conv(b, x, 8, 1, 3);
  Value* s = shuffle(b, y, 2);
  b.output(conv(b, channelSlice(b, s, 2, 7), 3, 1, 5));
  const int64_t macs_before = totalMacs(b.graph());
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(dataMovementNodes(b.graph()), 0u) << b.graph().dump();
  EXPECT_LT(totalMacs(b.graph()), macs_before);
}

TEST(PassFoldChannelPermutations, ConsumersReadingTheSameChannelsShareOneConcat) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* c = shuffle(b, concat(b, {conv(b, x, 4, 1, 3), conv(b, x, 4, 1, 5)}), 2);
  b.output(conv(b, conv(b, c, 8, 3, 7, /*group=*/8), 5, 1, 9));  // depthwise, then 1x1
  b.output(conv(b, c, 6, 1, 11));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Concat"), 1u) << b.graph().dump();
  EXPECT_EQ(dataMovementNodes(b.graph()), 1u) << b.graph().dump();
}

TEST(PassFoldChannelPermutations, RealShuffleNetMatchesOnnxRuntime) {
  // The shared shufflenet_v2_x0_5, optimized by every pass but the two that fold shuffles, then
  // this pass alone: differential on random inputs, and against ONNX Runtime's reference output.
  const testing::fs::path dir = testing::sharedModelsDir();
  if (dir.empty() || !testing::fs::exists(dir / "shufflenet_v2_x0_5.onnx"))
    NPUC_SKIP_MISSING_DEP("shared models folder not found (set NPUC_SHARED_MODELS)");
  auto g = importOnnxFile((dir / "shufflenet_v2_x0_5.onnx").string());
  OptimizeOptions options;
  options.disable_passes = {"fold_channel_permutations", "channel_shuffle_to_conv"};
  optimize(*g, options);
  ASSERT_EQ(countOps(*g, "Transpose"), 16u) << "the 16 shuffles are still there";
  const int64_t macs_before = totalMacs(*g);
  auto r = runPassChecked(*g, "fold_channel_permutations", kTolerance);
  EXPECT_EQ(r.changes, 3u) << "one region per stage\n" << failures(r);
  EXPECT_EQ(gatherConvs(*g), 0u);
  EXPECT_EQ(totalMacs(*g), macs_before) << "every Conv reads exactly the channels it read";
  for (const char* op : {"Reshape", "Transpose", "Slice"}) EXPECT_EQ(countOps(*g, op), 0u) << op;
  testing::TempDir scratch;
  const auto ref = testing::loadReferenceNpz(dir / "shufflenet_v2_x0_5.ref.npz", scratch.path());
  const std::vector<Tensor> outs = evalGraph(*g, ref.inputs);
  ASSERT_EQ(outs.size(), ref.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    passtest::expectClose(outs[i], ref.outputs[i].second, 1e-4, "output");
}

TEST(PassFoldChannelPermutationsRefusals, RegionValueIsAGraphOutput) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* s = shuffle(b, concat(b, {conv(b, x, 4, 1, 3), conv(b, x, 4, 1, 5)}), 2);
  b.output(s);
  b.output(conv(b, s, 2, 1, 7));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("is a graph output")) << b.graph().dump();
}

TEST(PassFoldChannelPermutationsRefusals, ProducerThatCannotReorderItsChannels) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 8, 4, 4});
  b.output(conv(b, shuffle(b, x, 2), 3, 1, 3));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("'x' enters the region but is not a group-1 Conv"));
}

TEST(PassFoldChannelPermutationsRefusals, ConsumerThatCannotAbsorbAnOrder) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* s = shuffle(b, conv(b, x, 8, 1, 3), 2);
  // The MaxPool would pass the order on, but its output is the graph's: nothing absorbs it.
  b.output(b.op("MaxPool", {s}, attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}})));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("(MaxPool) reads permuted channels but neither absorbs their order"));
}

TEST(PassFoldChannelPermutationsRefusals, NothingToGainIsQuietForPlainConcats) {
  // Concat(Conv, Conv) -> Conv is already one data-movement node: nothing to do, nothing to report.
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  b.output(conv(b, concat(b, {conv(b, x, 4, 1, 3), conv(b, x, 4, 1, 5)}), 2, 1, 7));
  auto r = runPassChecked(b.graph(), "fold_channel_permutations", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.ctx.match_failures.empty());
}

}  // namespace
}  // namespace npuc
