// legalize_pool_window: MaxPool / AveragePool beyond the target's kernel or stride limits become a
// global pool (window == input) or two pools within the limits (non-overlapping windows). Bit-exact
// for MaxPool (rtol 0), 1e-6 for AveragePool (the mean is summed in another order); the result is
// placed on the NPU by the same partitioner that put the original on the CPU. Refusals: padding,
// overlapping windows, a prime kernel above the limit, op_target cpu, AveragePool below level 3.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::cpuNodeCount;
using passtest::GraphBuilder;
using passtest::rk3588Target;
using passtest::runPassChecked;

struct PoolCase {
  std::string label;
  std::string op;  // MaxPool or AveragePool
  Shape x;
  std::vector<int64_t> kernel, strides;
  std::string becomes;  // the op type left, and how many of it
  size_t count;
};

Value* pool(GraphBuilder& b, const PoolCase& c, std::vector<int64_t> pads = {0, 0, 0, 0}) {
  return b.op(c.op, {b.input("x", c.x)},
              attrs({{"kernel_shape", c.kernel}, {"strides", c.strides}, {"pads", pads}}), "pool");
}

class PassLegalizePoolWindow : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PassLegalizePoolWindow, StaysOnTheNpu) {
  const PoolCase c = GetParam();
  GraphBuilder b;
  b.output(pool(b, c));
  const PassTarget t = rk3588Target();
  ASSERT_EQ(cpuNodeCount(b.graph(), t), 1u) << "the case must start on the CPU";
  auto r = runPassChecked(b.graph(), "legalize_pool_window", c.op == "MaxPool" ? 0.0 : 1e-6, 3, t);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), c.becomes), c.count);
  EXPECT_EQ(cpuNodeCount(b.graph(), t), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassLegalizePoolWindow,
    ::testing::Values(
        // A global pool written as a window over the whole input (stride irrelevant).
        PoolCase{"avg_global_14", "AveragePool", {1, 8, 14, 14}, {14, 14}, {1, 1}, "GlobalAveragePool", 1},
        PoolCase{"max_global_10x12", "MaxPool", {2, 4, 10, 12}, {10, 12}, {10, 12}, "GlobalMaxPool", 1},
        // Non-overlapping windows split into two pools: 9 = 3 x 3, 16 = 8 x 2 (stride 8 is allowed,
        // kernel 8 is not: the split must try both orders), 14 = 7 x 2.
        PoolCase{"max_9", "MaxPool", {1, 3, 27, 27}, {9, 9}, {9, 9}, "MaxPool", 2},
        PoolCase{"avg_16", "AveragePool", {1, 3, 32, 48}, {16, 16}, {16, 16}, "AveragePool", 2},
        PoolCase{"avg_14x2", "AveragePool", {1, 3, 28, 28}, {14, 2}, {14, 2}, "AveragePool", 2},
        // H not a multiple of the kernel: the trailing rows are ignored by both forms.
        PoolCase{"max_9_ragged", "MaxPool", {1, 3, 31, 29}, {9, 9}, {9, 9}, "MaxPool", 2}),
    [](const ::testing::TestParamInfo<PoolCase>& info) { return info.param.label; });

TEST(PassLegalizePoolWindowRefusals, SayWhy) {
  struct Refusal {
    PoolCase c;
    std::vector<int64_t> pads;
    bool user_cpu;
    std::string reason;
  };
  const std::vector<Refusal> cases = {
      {{"", "MaxPool", {1, 3, 32, 32}, {9, 9}, {9, 9}, "", 0}, {1, 1, 1, 1}, false, "padded"},
      {{"", "MaxPool", {1, 3, 32, 32}, {9, 9}, {4, 4}, "", 0}, {0, 0, 0, 0}, false, "overlapping windows"},
      {{"", "AveragePool", {1, 3, 33, 33}, {11, 11}, {11, 11}, "", 0},
       {0, 0, 0, 0},
       false,
       "kernel 11x11 has no split into two pools within the limits"},
      {{"", "MaxPool", {1, 3, 27, 27}, {9, 9}, {9, 9}, "", 0}, {0, 0, 0, 0}, true, "op_target"},
  };
  for (const Refusal& f : cases) {
    SCOPED_TRACE(f.reason);
    GraphBuilder b;
    b.output(pool(b, f.c, f.pads));
    PassTarget t = rk3588Target();
    if (f.user_cpu) t.op_target = {{"pool", "cpu"}};
    auto r = runPassChecked(b.graph(), "legalize_pool_window", 0.0, 3, t);
    EXPECT_EQ(r.changes, 0u);
    EXPECT_TRUE(r.failedWith(f.reason)) << "expected a match failure containing '" << f.reason << "'";
    EXPECT_TRUE(r.failedWith(f.c.op + " 'pool'")) << "the failure names the node";
  }
}

TEST(PassLegalizePoolWindowRefusals, AveragePoolOnlyAtLevel3MaxPoolAtAnyLevel) {
  for (const char* op : {"AveragePool", "MaxPool"}) {
    GraphBuilder b;
    b.output(pool(b, PoolCase{"", op, {1, 3, 27, 27}, {9, 9}, {9, 9}, "", 0}));
    auto r = runPassChecked(b.graph(), "legalize_pool_window", 0.0, 2, rk3588Target());
    EXPECT_EQ(r.changes, std::string(op) == "MaxPool" ? 1u : 0u) << op;
  }
}

}  // namespace
}  // namespace npuc
