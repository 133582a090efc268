// legalize_conv_stride: Convs whose stride or kernel the target NPU does not run become SpaceToDepth
// + a Conv within the limits. Differential on random inputs (1e-5: the sum runs in another order),
// and the result is placed wholly on the NPU by the same partitioner that put the original on the
// CPU. Refusals: no target, op_target cpu, grouped, dilated, a size or pad not a multiple of the
// block, level below 3.
#include "pass_test_util.h"
#include "passes/optimize.h"
#include "target/partition.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

constexpr double kReorderedSumTolerance = 1e-5;

struct StrideCase {
  std::string label;
  Shape x;                       // NCHW input
  std::vector<int64_t> kernel;   // kh, kw
  std::vector<int64_t> strides;  // sh, sw
  std::vector<int64_t> pads;     // top, left, bottom, right
  bool bias;
  int64_t block;  // the block the pass should choose on rk3588 (strides 1-7, kernel 1-31)
};

Value* conv(GraphBuilder& b, Value* x, const StrideCase& c, int64_t out_channels = 6) {
  std::vector<Value*> in{x, b.randomConstant({out_channels, x->shape()[1], c.kernel[0], c.kernel[1]}, 3)};
  if (c.bias) in.push_back(b.randomConstant({out_channels}, 4));
  return b.op("Conv", in, attrs({{"strides", c.strides}, {"pads", c.pads}}), "conv");
}

class PassLegalizeConvStride : public ::testing::TestWithParam<StrideCase> {};

TEST_P(PassLegalizeConvStride, MovesTheConvOntoTheNpu) {
  const StrideCase c = GetParam();
  GraphBuilder b;
  b.output(conv(b, b.input("x", c.x), c));
  const PassTarget t = passtest::rk3588Target();
  ASSERT_EQ(passtest::cpuNodeCount(b.graph(), t), 1u) << "the case must start on the CPU";
  auto r = runPassChecked(b.graph(), "legalize_conv_stride", kReorderedSumTolerance, 3, t);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 1u);
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), t), 0u);
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() == "SpaceToDepth") {
      EXPECT_EQ(n->attrs().i("blocksize", 0), c.block);
    }
    if (n->opType() == "Conv") {
      EXPECT_EQ(n->name(), "conv/Conv") << "named after the Conv it replaces (the Rewriter's convention)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassLegalizeConvStride,
    ::testing::Values(
        // ViT patch embedding: kernel = stride = 8.
        StrideCase{"patch8", {1, 3, 32, 32}, {8, 8}, {8, 8}, {0, 0, 0, 0}, true, 2},
        StrideCase{"patch8_batch2_nobias", {2, 3, 16, 24}, {8, 8}, {8, 8}, {0, 0, 0, 0}, false, 2},
        // Stride 16: block 2 leaves stride 8, block 4 is the smallest that fits.
        StrideCase{"patch16", {1, 3, 32, 32}, {16, 16}, {16, 16}, {0, 0, 0, 0}, true, 4},
        // A kernel that is not a multiple of the block (zero taps pad it), smaller than the stride.
        StrideCase{"k7_s8", {1, 4, 32, 32}, {7, 7}, {8, 8}, {0, 0, 0, 0}, true, 2},
        // Overlapping windows with padding (a multiple of the block; the bottom pad is recomputed).
        StrideCase{"k10_s8_pad2", {1, 3, 32, 32}, {10, 10}, {8, 8}, {2, 2, 2, 2}, true, 2},
        StrideCase{"k10_s8_pad2_asym", {1, 3, 30, 34}, {10, 9}, {8, 8}, {2, 4, 1, 3}, true, 2},
        // Stride 9: the block must divide it.
        StrideCase{"k9_s9", {1, 3, 36, 27}, {9, 9}, {9, 9}, {0, 0, 0, 0}, true, 3},
        // Different strides per dim: the block divides both.
        StrideCase{"s8x4", {1, 3, 32, 32}, {8, 4}, {8, 4}, {0, 0, 0, 0}, true, 2},
        // A kernel beyond 31 (with its stride): block 8 makes kernel 4, stride 4.
        StrideCase{"patch32", {1, 3, 64, 64}, {32, 32}, {32, 32}, {0, 0, 0, 0}, true, 8}),
    [](const ::testing::TestParamInfo<StrideCase>& info) { return info.param.label; });

TEST(PassLegalizeConvStrideRefusals, NothingWithoutATargetOrBelowLevel3) {
  const StrideCase c{"", {1, 3, 32, 32}, {8, 8}, {8, 8}, {0, 0, 0, 0}, true, 2};
  GraphBuilder b;
  b.output(conv(b, b.input("x", c.x), c));
  EXPECT_EQ(runPassChecked(b.graph(), "legalize_conv_stride", 0.0).changes, 0u);
  EXPECT_EQ(runPassChecked(b.graph(), "legalize_conv_stride", 0.0, 2, passtest::rk3588Target()).changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "SpaceToDepth"), 0u);
}

TEST(PassLegalizeConvStrideRefusals, ANpuConvIsLeftAlone) {
  const StrideCase c{"", {1, 3, 32, 32}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, 0};
  GraphBuilder b;
  b.output(conv(b, b.input("x", c.x), c));
  auto r = runPassChecked(b.graph(), "legalize_conv_stride", 0.0, 3, passtest::rk3588Target());
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.ctx.match_failures.empty());
}

struct Refusal {
  std::string label;
  StrideCase conv;
  int64_t group;
  int64_t dilation;
  bool on_cpu_by_user;
  std::string reason;
};

class PassLegalizeConvStrideRefuses : public ::testing::TestWithParam<Refusal> {};

TEST_P(PassLegalizeConvStrideRefuses, SaysWhy) {
  const Refusal f = GetParam();
  const StrideCase& c = f.conv;
  GraphBuilder b;
  Value* x = b.input("x", c.x);
  const int64_t in_per_group = c.x[1] / f.group;
  Value* w = b.randomConstant({6, in_per_group, c.kernel[0], c.kernel[1]}, 3);
  b.output(b.op("Conv", {x, w},
                attrs({{"strides", c.strides},
                       {"pads", c.pads},
                       {"group", f.group},
                       {"dilations", std::vector<int64_t>{f.dilation, f.dilation}}}),
                "conv"));
  PassTarget t = passtest::rk3588Target();
  if (f.on_cpu_by_user) t.op_target = {{"conv", "cpu"}};
  auto r = runPassChecked(b.graph(), "legalize_conv_stride", 0.0, 3, t);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith(f.reason)) << "expected a match failure containing '" << f.reason << "'";
  EXPECT_TRUE(r.failedWith("Conv 'conv'")) << "the failure names the node";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassLegalizeConvStrideRefuses,
    ::testing::Values(
        Refusal{"user_cpu",
                {"", {1, 3, 32, 32}, {8, 8}, {8, 8}, {0, 0, 0, 0}, false, 0},
                1,
                1,
                true,
                "op_target"},
        Refusal{
            "grouped", {"", {1, 6, 32, 32}, {8, 8}, {8, 8}, {0, 0, 0, 0}, false, 0}, 2, 1, false, "grouped"},
        Refusal{
            "dilated", {"", {1, 3, 64, 64}, {3, 3}, {8, 8}, {0, 0, 0, 0}, false, 0}, 1, 2, false, "dilated"},
        Refusal{"odd_size",
                {"", {1, 3, 33, 33}, {8, 8}, {8, 8}, {0, 0, 0, 0}, false, 0},
                1,
                1,
                false,
                "not a multiple of block"},
        Refusal{"odd_pad",
                {"", {1, 3, 32, 32}, {9, 9}, {8, 8}, {1, 1, 1, 1}, false, 0},
                1,
                1,
                false,
                "pad 1 is not a multiple of block 2"},
        Refusal{"prime_stride",
                {"", {1, 3, 32, 32}, {11, 11}, {11, 11}, {0, 0, 0, 0}, false, 0},
                1,
                1,
                false,
                "block 11: input dim 2 (32) is not a multiple of block 11"},
        // A hostile stride: the search stops at the input size (64), not at 2^20.
        Refusal{"huge_stride",
                {"", {1, 3, 64, 64}, {8, 8}, {int64_t{1} << 20, int64_t{1} << 20}, {0, 0, 0, 0}, false, 0},
                1,
                1,
                false,
                "block 64: Conv stride"},
        Refusal{"stride_1",
                {"", {1, 3, 40, 40}, {33, 33}, {1, 1}, {0, 0, 0, 0}, false, 0},
                1,
                1,
                false,
                "no block size divides strides 1x1 and input 40x40"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return info.param.label; });

// optimize() with a target: the patch embedding of a ViT (Conv 8x8/8 -> Reshape -> Transpose, as
// PyTorch exports it) stays on the NPU on every SoC whose profile lists SpaceToDepth; the
// legalization fires once and the next optimize() round finds nothing more to do.
TEST(PassLegalizeConvStridePipeline, TargetStageOnEverySoc) {
  int legalized = 0;
  for (const std::string& soc_name : socNames()) {
    SCOPED_TRACE(soc_name);
    const SocProfile& soc = socProfile(soc_name);
    const StrideCase c{"", {1, 3, 32, 32}, {8, 8}, {8, 8}, {0, 0, 0, 0}, true, 2};
    GraphBuilder b;
    Value* y = conv(b, b.input("x", c.x), c, 16);
    Value* flat = b.op("Reshape", {y, b.int64s({1, 16, 16})});
    b.output(b.op("Transpose", {flat}, attrs({{"perm", std::vector<int64_t>{0, 2, 1}}})));
    std::unique_ptr<Graph> original = b.graph().clone();
    OptimizeOptions options;
    options.target = PassTarget{&soc, NpuDType::Int8, {}};
    options.align_channels = false;
    optimize(b.graph(), options);
    passtest::expectSameResults(*original, b.graph(), kReorderedSumTolerance);
    if (!soc.opSupport("SpaceToDepth")) continue;
    const PartitionReport placed = partitionGraph(b.graph(), soc);
    for (const NodePlacement& p : placed.nodes) {
      if (p.node->opType() == "Conv") {
        EXPECT_EQ(p.device, Device::Npu) << p.detail;
      }
    }
    legalized += countOps(b.graph(), "SpaceToDepth") == 1;
  }
  EXPECT_GE(legalized, 1);
}

}  // namespace
}  // namespace npuc
