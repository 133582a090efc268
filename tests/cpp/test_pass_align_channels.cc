// align_channels: differential checks (original vs padded graph, 1e-5) on random Conv/Relu/Add/
// Conv chains with odd channel counts (3, 17, 31, 33, 100) for rk3588 and rk3566 int8, graph
// outputs in the middle and at the end, depthwise and Gemm layers, per-channel constants, a CPU
// op; structural checks (padded widths are multiples of the alignment, Slices only before graph
// outputs and unhandled ops) and the cost function (a final layer is not padded by itself).
#include <numeric>
#include <random>
#include <set>

#include "common/error.h"
#include "pass_test_util.h"
#include "passes/align_channels.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;

constexpr int64_t kOddChannels[] = {3, 17, 31, 33, 100};

// Runs the pass and checks what must hold whatever it decided: the graph verifies, types agree
// with shape inference, results match the original within 1e-5, output names are kept.
size_t alignChecked(Graph& g, const std::string& soc, const AlignOptions& options = {},
                    DType dtype = DType::Int8) {
  std::unique_ptr<Graph> original = g.clone();
  const size_t changes = alignChannels(g, socProfile(soc), dtype, options);
  verifyOptimizedGraph(g, "align_channels");
  passtest::expectTypesConsistent(g);
  passtest::expectSameResults(*original, g, 1e-5);
  return changes;
}

AlignOptions forced() {
  AlignOptions o;
  o.force = true;
  return o;
}

Value* conv(GraphBuilder& b, Value* x, int64_t cout, uint32_t seed, int64_t kernel = 3) {
  const int64_t cin = x->shape()[1], pad = kernel / 2;
  return b.op("Conv",
              {x, b.randomConstant({cout, cin, kernel, kernel}, seed), b.randomConstant({cout}, seed + 1)},
              attrs({{"pads", std::vector<int64_t>{pad, pad, pad, pad}}}));
}

Value* depthwise(GraphBuilder& b, Value* x, uint32_t seed) {
  const int64_t c = x->shape()[1];
  return b.op("Conv", {x, b.randomConstant({c, 1, 3, 3}, seed), b.randomConstant({c}, seed + 1)},
              attrs({{"group", c}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
}

const Node* producerOf(const Value* v) {
  return v->producer();
}

// Every Slice the pass added reads a padded tensor and feeds only graph outputs and ops that
// cannot take padded channels (in these graphs: Flatten, Concat, Reshape, or a CPU-placed op).
void expectSlicesOnlyAtBoundaries(const Graph& g, const std::set<std::string>& boundary_ops) {
  for (const Node* n : g.nodes()) {
    if (n->opType() != "Slice") continue;
    const Value* out = n->output();
    EXPECT_TRUE(out->isGraphOutput() || out->hasUses()) << n->name();
    for (const Use& u : out->uses()) {
      EXPECT_TRUE(boundary_ops.count(u.user->opType()) || boundary_ops.count(u.user->name()))
          << "Slice '" << n->name() << "' feeds " << u.user->opType() << " '" << u.user->name() << "'";
    }
  }
}

// Every group-1 Conv reading a tensor the pass could pad (not a graph input, not a Slice) has
// aligned input channels, and every one has aligned output channels (forced mode pads them all).
void expectConvsAligned(const Graph& g, const SocProfile& soc) {
  const int64_t in_align = soc.alignment(NpuDType::Int8, AlignmentRole::ConvInput);
  const int64_t out_align = soc.alignment(NpuDType::Int8, AlignmentRole::ConvOutput);
  for (const Node* n : g.nodes()) {
    if (n->opType() != "Conv" || n->attrs().i("group", 1) != 1) continue;
    EXPECT_EQ(n->output()->shape()[1] % out_align, 0)
        << n->name() << " output " << shapeStr(n->output()->shape());
    const Node* p = producerOf(n->input(0));
    if (p && p->opType() != "Slice") {
      EXPECT_EQ(n->input(0)->shape()[1] % in_align, 0)
          << n->name() << " input " << shapeStr(n->input(0)->shape());
    }
  }
}

// A random chain Conv -> act -> [Add residual] -> Conv ... over the odd channel counts, with a
// graph output in the middle (sometimes through a Flatten) and one at the end.
std::unique_ptr<Graph> randomChain(uint32_t seed, int layers) {
  std::mt19937 gen(seed);
  auto pick = [&](int n) { return static_cast<int>(gen() % static_cast<uint32_t>(n)); };
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* prev_same = nullptr;  // an earlier tensor with the current channel count, for a residual
  for (int l = 0; l < layers; ++l) {
    const int64_t c = kOddChannels[pick(5)];
    Value* y = conv(b, x, c, seed * 100 + static_cast<uint32_t>(l) * 2, pick(2) ? 3 : 1);
    y = b.op(pick(3) == 0 ? "Sigmoid" : "Relu", {y});
    if (prev_same && prev_same->shape() == y->shape()) y = b.op("Add", {y, prev_same});
    if (pick(4) == 0 && prev_same == nullptr) {
      Value* r = conv(b, y, c, seed * 100 + 50 + static_cast<uint32_t>(l), 1);
      y = b.op("Add", {y, r});  // Add of two padded tensors
    }
    if (l == layers / 2) b.output(pick(2) ? y : b.op("Flatten", {y}));  // an output in the middle
    prev_same = y;
    x = y;
  }
  b.output(x);
  return b.release();
}

struct ChainCase {
  std::string soc;
  uint32_t seed;
};
void PrintTo(const ChainCase& c, std::ostream* os) {
  *os << c.soc << " seed " << c.seed;
}

class PassAlignChannelsChain : public ::testing::TestWithParam<ChainCase> {};

TEST_P(PassAlignChannelsChain, ForcedPaddingKeepsResults) {
  const ChainCase c = GetParam();
  auto g = randomChain(c.seed, 5);
  const size_t slices_before = countOps(*g, "Slice");
  EXPECT_GT(alignChecked(*g, c.soc, forced()), 0u);
  expectConvsAligned(*g, socProfile(c.soc));
  expectSlicesOnlyAtBoundaries(*g, {"Flatten"});
  EXPECT_GE(countOps(*g, "Slice"), slices_before + 1) << "the final output needs a Slice";
}

TEST_P(PassAlignChannelsChain, CostDrivenPaddingKeepsResults) {
  const ChainCase c = GetParam();
  auto g = randomChain(c.seed, 5);
  // Every inner Conv -> act -> Conv link gains two aligned layers for at most one Slice.
  EXPECT_GT(alignChecked(*g, c.soc), 0u);
  expectSlicesOnlyAtBoundaries(*g, {"Flatten"});
}

INSTANTIATE_TEST_SUITE_P(Chains, PassAlignChannelsChain,
                         ::testing::Values(ChainCase{"rk3588", 1}, ChainCase{"rk3588", 2},
                                           ChainCase{"rk3588", 3}, ChainCase{"rk3588", 4},
                                           ChainCase{"rk3566", 5}, ChainCase{"rk3566", 6},
                                           ChainCase{"rk3566", 7}, ChainCase{"rk3566", 8}));

// Every odd count as the middle width of Conv -> Relu -> Conv: padded (two layers gain, no Slice).
TEST(PassAlignChannels, EveryOddCountBetweenTwoConvsIsPadded) {
  for (const std::string& soc : {std::string("rk3588"), std::string("rk3566")}) {
    const SocProfile& p = socProfile(soc);
    for (int64_t c : kOddChannels) {
      SCOPED_TRACE(soc + " channels " + std::to_string(c));
      GraphBuilder b;
      Value* y = b.op("Relu", {conv(b, b.input("x", {2, 5, 5, 5}), c, 1)});
      b.output(conv(b, y, 8, 3, 1));
      const int64_t align = std::lcm(p.alignment(NpuDType::Int8, AlignmentRole::ConvOutput),
                                     p.alignment(NpuDType::Int8, AlignmentRole::ConvInput));
      const size_t changes = alignChecked(b.graph(), soc);
      if (c % align == 0) {
        EXPECT_EQ(changes, 0u);
        continue;
      }
      EXPECT_EQ(changes, 3u);  // two Convs and the Relu's re-typing
      EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
      EXPECT_EQ(y->shape()[1] % align, 0) << shapeStr(y->shape());
    }
  }
}

TEST(PassAlignChannels, FinalLayerAloneDoesNotPayAndNothingChanges) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* y = b.op("Relu", {conv(b, x, 17, 1)});
  b.output(y);
  b.output(b.op("Flatten", {conv(b, x, 33, 5)}));
  const std::string before = b.graph().dump();
  EXPECT_EQ(alignChecked(b.graph(), "rk3588"), 0u);
  EXPECT_EQ(b.graph().dump(), before);
}

TEST(PassAlignChannels, AlreadyAlignedGraphIsUntouchedEvenWhenForced) {
  GraphBuilder b;
  Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 6, 6}), 64, 1)});
  b.output(conv(b, y, 32, 3));
  EXPECT_EQ(alignChecked(b.graph(), "rk3588", forced()), 0u);
}

TEST(PassAlignChannels, GraphOutputInTheMiddleGetsASliceAndKeepsItsName) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* mid = b.op("Sigmoid", {conv(b, x, 17, 1)}, {}, "mid");  // padded channels hold 0.5
  Value* y = b.op("Relu", {conv(b, mid, 31, 3)});
  b.output(mid);
  b.output(conv(b, y, 4, 5));
  const std::string mid_name = mid->name();
  alignChecked(b.graph(), "rk3588");
  EXPECT_EQ(countOps(b.graph(), "Slice"), 1u);
  const Value* out = b.graph().outputs()[0];
  EXPECT_EQ(out->name(), mid_name);
  EXPECT_EQ(out->producer()->opType(), "Slice");
  EXPECT_EQ(out->producer()->input(0)->shape()[1], 32);
  EXPECT_EQ(y->shape()[1], 32);
  expectSlicesOnlyAtBoundaries(b.graph(), {});
}

TEST(PassAlignChannels, DepthwiseChannelsPadToTheDepthwiseAlignment) {
  for (const std::string& soc : {std::string("rk3588"), std::string("rk3566")}) {
    SCOPED_TRACE(soc);
    const int64_t dw_align = socProfile(soc).alignment(NpuDType::Int8, AlignmentRole::Depthwise);
    GraphBuilder b;
    Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 7, 7}), 17, 1)});
    Node* dw = depthwise(b, y, 3)->producer();
    b.output(conv(b, b.op("Relu", {dw->output()}), 31, 5, 1));
    alignChecked(b.graph(), soc);
    EXPECT_EQ(dw->attrs().i("group", 1) % dw_align, 0);
    EXPECT_EQ(dw->input(1)->shape()[0], dw->attrs().i("group", 1));
    EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
  }
}

TEST(PassAlignChannels, DepthwiseOnAGraphInputIsLeftAlone) {
  GraphBuilder b;
  Value* dw = depthwise(b, b.input("x", {1, 17, 5, 5}), 1);
  b.output(conv(b, dw, 8, 3));
  EXPECT_EQ(alignChecked(b.graph(), "rk3588", forced()), 2u);  // the Conv's output and its Slice
  EXPECT_EQ(dw->producer()->attrs().i("group", 1), 17);
}

TEST(PassAlignChannels, GemmChainPadsNAndK) {
  for (int trans_b = 0; trans_b < 2; ++trans_b) {
    SCOPED_TRACE("transB=" + std::to_string(trans_b));
    GraphBuilder b;
    Value* a = b.input("a", {4, 17});
    auto gemm = [&](Value* in, int64_t n, uint32_t seed, const Shape& c_shape) {
      const int64_t k = in->shape()[1];
      return b.op("Gemm",
                  {in, b.randomConstant(trans_b ? Shape{n, k} : Shape{k, n}, seed),
                   b.randomConstant(c_shape, seed + 1)},
                  attrs({{"transB", int64_t{trans_b}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
    };
    Value* h = b.op("Relu", {gemm(a, 33, 1, {33})});
    Value* h2 = b.op("Tanh", {gemm(h, 100, 3, {1, 100})});
    b.output(gemm(h2, 3, 5, {4, 3}));
    alignChecked(b.graph(), "rk3588");
    EXPECT_EQ(h->shape()[1], 64);
    EXPECT_EQ(h2->shape()[1], 128);
    EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
  }
}

TEST(PassAlignChannels, ConvIntoFlattenGemmSlicesBeforeTheFlatten) {
  GraphBuilder b;
  Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 4, 4}), 17, 1)});
  Value* f = b.op("Flatten", {y});
  b.output(b.op("Gemm", {f, b.randomConstant({17 * 16, 10}, 3)}));
  EXPECT_GT(alignChecked(b.graph(), "rk3588", forced()), 0u);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 2u);  // before the Flatten, and the Gemm's output
  EXPECT_EQ(f->producer()->input(0)->producer()->opType(), "Slice");
  expectSlicesOnlyAtBoundaries(b.graph(), {"Flatten"});
}

TEST(PassAlignChannels, PerChannelConstantsArePadded) {
  GraphBuilder b;
  Value* y = conv(b, b.input("x", {2, 3, 5, 5}), 31, 1);
  y = b.op("Mul", {b.randomConstant({31, 1, 1}, 3), y});  // constant first
  y = b.op("Div", {y, b.randomConstant({1, 31, 1, 1}, 4, 0.5f, 2.0f)});
  y = b.op("Sub", {b.scalar(0.25f), y});
  y = b.op("PRelu", {y, b.randomConstant({31, 1, 1}, 5)});
  b.output(conv(b, y, 5, 6));
  alignChecked(b.graph(), "rk3588");
  EXPECT_EQ(y->shape()[1], 32);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 0u);
}

TEST(PassAlignChannels, AddOfTwoPaddedTensorsStaysPaddedAndOtherTensorsSlice) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 5, 5});
  Value* skip = b.input("skip", {1, 33, 5, 5});
  Value *l = conv(b, x, 33, 1), *r = conv(b, x, 33, 3, 1);
  Value* sum = b.op("Add", {l, r});
  Value* mixed = b.op("Add", {sum, skip});  // a graph input cannot be padded: sum is sliced for it
  b.output(conv(b, sum, 32, 5));            // aligned already: no Slice of its own
  b.output(mixed);
  alignChecked(b.graph(), "rk3588", forced());
  EXPECT_EQ(sum->shape()[1], 64);
  EXPECT_EQ(countOps(b.graph(), "Slice"), 1u);
  expectSlicesOnlyAtBoundaries(b.graph(), {"Add"});
  EXPECT_EQ(mixed->producer()->input(0)->producer()->opType(), "Slice");
}

TEST(PassAlignChannels, CpuPlacedOpReadsASlice) {
  GraphBuilder b;
  Value* y = conv(b, b.input("x", {1, 3, 5, 5}), 17, 1);
  Value* act = b.op("Relu", {y}, {}, "cpu_relu");
  b.output(conv(b, act, 8, 3));
  AlignOptions o = forced();
  o.op_target = {{"cpu_relu", "cpu"}};
  alignChecked(b.graph(), "rk3588", o);
  EXPECT_EQ(y->shape()[1], 32);
  EXPECT_EQ(act->shape()[1], 17);
  EXPECT_EQ(act->producer()->input(0)->producer()->opType(), "Slice");
  EXPECT_EQ(countOps(b.graph(), "Slice"), 2u);  // before the CPU Relu, and the last Conv's output
  expectSlicesOnlyAtBoundaries(b.graph(), {"cpu_relu"});
}

TEST(PassAlignChannels, Rk3566Fp16UsesItsOwnTable) {
  GraphBuilder b;
  Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 5, 5}), 17, 1)});
  b.output(conv(b, y, 8, 3));
  alignChecked(b.graph(), "rk3566", {}, DType::Float16);
  EXPECT_EQ(y->shape()[1], 32);  // conv_out 8, conv_in 16 for 16-bit types: lcm 16, 17 -> 32
}

TEST(PassAlignChannels, DtypeWithoutNpuCounterpartIsAConfigError) {
  GraphBuilder b;
  b.output(conv(b, b.input("x", {1, 3, 5, 5}), 17, 1));
  EXPECT_THROW(alignChannels(b.graph(), socProfile("rk3588"), DType::Float64), ConfigError);
}

// The registered pass reads the target from the PassContext: without one it changes nothing.
TEST(PassAlignChannels, RegisteredPassWithoutATargetChangesNothing) {
  GraphBuilder b;
  Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 5, 5}), 17, 1)});
  b.output(conv(b, y, 8, 3));
  auto r = passtest::runPassChecked(b.graph(), "align_channels", 1e-5);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_EQ(y->shape()[1], 17);
}

// optimize() with a target runs the target stage for every SoC profile and every NPU dtype it
// computes in: the 17-channel tensor between two Convs is padded to that table's alignment and the
// results stay within 1e-5 of the original.
TEST(PassAlignChannels, TargetStageAlignsForEverySocAndDtype) {
  int checked = 0;
  for (const std::string& soc_name : socNames()) {
    const SocProfile& soc = socProfile(soc_name);
    for (NpuDType dtype : {NpuDType::Int8, NpuDType::Float16, NpuDType::Int16}) {
      if (!soc.supportsDtype(dtype)) continue;
      SCOPED_TRACE(soc_name + " " + npuDTypeName(dtype));
      GraphBuilder b;
      Value* y = b.op("Relu", {conv(b, b.input("x", {1, 3, 5, 5}), 17, 1)});
      b.output(conv(b, y, 8, 3));
      std::unique_ptr<Graph> original = b.graph().clone();
      OptimizeOptions options;
      options.target = PassTarget{&soc, dtype, {}};
      const OptimizationReport report = optimize(b.graph(), options);
      passtest::expectSameResults(*original, b.graph(), 1e-5);
      const int64_t align = std::lcm(soc.alignment(dtype, AlignmentRole::ConvOutput),
                                     soc.alignment(dtype, AlignmentRole::ConvInput));
      int64_t widest = 0;  // the padded middle tensor (the Relu may have fused into the Conv)
      for (const Node* n : b.graph().nodes())
        if (n->output()->rank() == 4) widest = std::max(widest, n->output()->shape()[1]);
      if (17 % align == 0) continue;
      EXPECT_EQ(widest % align, 0) << "widest " << widest << ", alignment " << align;
      bool fired = false;
      for (const PassFiring& f : report.fired) fired |= f.pass == "align_channels";
      EXPECT_TRUE(fired);
      ++checked;
    }
  }
  EXPECT_GE(checked, 5);  // every profile pads 17 channels for int8 at least
}

}  // namespace
}  // namespace npuc
