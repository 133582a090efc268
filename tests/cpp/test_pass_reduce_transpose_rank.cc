// reduce_transpose_rank: a Transpose above the target's rank limit becomes Reshape -> Transpose of
// the smallest equivalent rank -> Reshape. Bit-exact (rtol 0) on random inputs; the result is placed
// on the NPU by the same partitioner. Refusals: a form that is still too big (independent axes, a
// merged dim above max_dim), op_target cpu, no target. And the attention block of issue #24 (a
// [1, 40, 360] tensor split into q/k/v of 8 heads of 15) runs with no CPU op after optimize().
#include "pass_test_util.h"
#include "passes/optimize.h"
#include "target/partition.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

struct RankCase {
  std::string label;
  Shape x;
  std::vector<int64_t> perm;
  size_t reduced_rank;  // 0: no Transpose left (only size-1 axes moved)
};

class PassReduceTransposeRank : public ::testing::TestWithParam<RankCase> {};

TEST_P(PassReduceTransposeRank, BecomesALowerRankTransposeOnTheNpu) {
  const RankCase c = GetParam();
  GraphBuilder b;
  b.output(b.op("Transpose", {b.input("x", c.x)}, attrs({{"perm", c.perm}}), "t"));
  const PassTarget t = passtest::rk3588Target();
  ASSERT_EQ(passtest::cpuNodeCount(b.graph(), t), 1u) << "the case must start on the CPU";
  auto r = runPassChecked(b.graph(), "reduce_transpose_rank", 0.0, 3, t);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), t), 0u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), c.reduced_rank ? 1u : 0u);
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() == "Transpose") {
      EXPECT_EQ(static_cast<size_t>(n->output()->rank()), c.reduced_rank);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PassReduceTransposeRank,
                         ::testing::Values(
                             // The SVTR / MultiheadAttention head split: batch 1 dropped, (q/k/v, heads) move
                             // as one block -> [40, 24, 15] perm (1, 0, 2).
                             RankCase{"qkv_split", {1, 40, 3, 8, 15}, {2, 0, 3, 1, 4}, 3},
                             // Adjacent pairs move together: [6, 20, 42] perm (0, 2, 1).
                             RankCase{"pairs", {2, 3, 4, 5, 6, 7}, {0, 1, 4, 5, 2, 3}, 3},
                             // Batch 2 kept, the two trailing axes merge: [2, 3, 4, 30] perm (3, 0, 2, 1).
                             RankCase{"batch2", {2, 3, 4, 5, 6}, {3, 4, 0, 2, 1}, 4},
                             // Only axes of size 1 move: no Transpose is needed at all.
                             RankCase{"ones_only", {1, 4, 1, 5, 6}, {2, 0, 1, 3, 4}, 0}),
                         [](const ::testing::TestParamInfo<RankCase>& info) { return info.param.label; });

TEST(PassReduceTransposeRankRefusals, NothingWithoutATargetOrForARank4Transpose) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 40, 3, 8, 15});
  Value* t5 = b.op("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{2, 0, 3, 1, 4}}}));
  Value* y = b.op("Reshape", {t5, b.int64s({3, 8, 40, 15})});
  b.output(b.op("Transpose", {y}, attrs({{"perm", std::vector<int64_t>{0, 1, 3, 2}}})));
  EXPECT_EQ(runPassChecked(b.graph(), "reduce_transpose_rank", 0.0).changes, 0u);
  auto r = runPassChecked(b.graph(), "reduce_transpose_rank", 0.0, 3, passtest::rk3588Target());
  EXPECT_EQ(r.changes, 1u) << "only the rank-5 Transpose is rewritten";
  EXPECT_TRUE(r.ctx.match_failures.empty());
}

struct RankRefusal {
  std::string label;
  Shape x;
  std::vector<int64_t> perm;
  bool on_cpu_by_user;
  std::string reason;
};

class PassReduceTransposeRankRefuses : public ::testing::TestWithParam<RankRefusal> {};

TEST_P(PassReduceTransposeRankRefuses, SaysWhy) {
  const RankRefusal f = GetParam();
  GraphBuilder b;
  b.output(b.op("Transpose", {b.input("x", f.x)}, attrs({{"perm", f.perm}}), "t"));
  PassTarget t = passtest::rk3588Target();
  if (f.on_cpu_by_user) t.op_target = {{"t", "cpu"}};
  auto r = runPassChecked(b.graph(), "reduce_transpose_rank", 0.0, 3, t);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith(f.reason)) << "expected a match failure containing '" << f.reason << "'";
  EXPECT_TRUE(r.failedWith("Transpose 't'")) << "the failure names the node";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassReduceTransposeRankRefuses,
    ::testing::Values(RankRefusal{"user_cpu", {1, 40, 3, 8, 15}, {2, 0, 3, 1, 4}, true, "op_target"},
                      RankRefusal{"all_axes_independent",
                                  {2, 3, 4, 5, 6},
                                  {4, 3, 2, 1, 0},
                                  false,
                                  "its smallest form, [2,3,4,5,6] perm 4,3,2,1,0, fails too"},
                      RankRefusal{
                          "merged_dim_too_big", {2, 200, 100, 3, 2}, {3, 4, 0, 1, 2}, false, "above 16384"}),
    [](const ::testing::TestParamInfo<RankRefusal>& info) { return info.param.label; });

// The attention block of issue #24: a [1, 40, 360] token tensor split into q, k, v of 8 heads of
// 15 through a rank-5 Reshape/Transpose (as PyTorch's MultiheadAttention export writes it),
// softmax(q k^T / sqrt(15)) v, heads merged back to [1, 40, 120]. Before: the rank-5 Transpose is
// a CPU op between NPU ops. After optimize() for rk3588: no CPU op, same results.
TEST(PassReduceTransposeRankPipeline, AttentionBlockRunsWithNoCpuOp) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 40, 360});
  Value* split = b.op("Reshape", {x, b.int64s({1, 40, 3, 8, 15})});
  Value* heads = b.op("Transpose", {split}, attrs({{"perm", std::vector<int64_t>{2, 0, 3, 1, 4}}}), "qkv_t");
  Value* q = b.op("Gather", {heads, b.constant(Tensor::scalar<int64_t>(0))}, attrs({{"axis", int64_t{0}}}));
  Value* k = b.op("Gather", {heads, b.constant(Tensor::scalar<int64_t>(1))}, attrs({{"axis", int64_t{0}}}));
  Value* v = b.op("Gather", {heads, b.constant(Tensor::scalar<int64_t>(2))}, attrs({{"axis", int64_t{0}}}));
  Value* kt = b.op("Transpose", {k}, attrs({{"perm", std::vector<int64_t>{0, 1, 3, 2}}}));
  Value* scores = b.op("Mul", {b.op("MatMul", {q, kt}), b.scalar(1.0f / std::sqrt(15.0f))});
  Value* attn = b.op("Softmax", {scores}, attrs({{"axis", int64_t{-1}}}));
  Value* ctx = b.op("MatMul", {attn, v});
  Value* merged = b.op("Transpose", {ctx}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  b.output(b.op("Reshape", {merged, b.int64s({1, 40, 120})}));
  const PassTarget t = passtest::rk3588Target();
  ASSERT_GE(passtest::cpuNodeCount(b.graph(), t), 1u);
  std::unique_ptr<Graph> original = b.graph().clone();
  OptimizeOptions options;
  options.target = t;
  options.align_channels = false;
  optimize(b.graph(), options);
  passtest::expectSameResults(*original, b.graph(), 1e-5);
  const PartitionReport placed = partitionGraph(b.graph(), *t.soc);
  EXPECT_EQ(placed.count(Device::Cpu), 0u) << placed.toText();
  EXPECT_EQ(placed.handovers, 0u);
}

}  // namespace
}  // namespace npuc
