// attention_cleanup: the head split of PyTorch's MultiheadAttention export (one q/k/v Gemm, three
// last-axis Slices, a Reshape to heads each, the 1/sqrt(d) scale on q, a Transpose each) becomes one
// Reshape, one Transpose shared by q and v, k's own Transpose, and no Mul. Differential checks on
// random inputs (the scale folding reassociates: 1e-5), then the refusals that keep it exact.
#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

const std::vector<int64_t> kHeadsFirst{1, 0, 2};  // [tokens, heads, d] -> [heads, tokens, d]
const std::vector<int64_t> kKeysLast{1, 2, 0};    // [tokens, heads, d] -> [heads, d, tokens]

struct HeadSplit {
  Value* q = nullptr;
  Value* k = nullptr;
  Value* v = nullptr;
};

// tokens x (3 * heads * d) projection of x [tokens, C], split as the export writes it.
HeadSplit exportedHeadSplit(GraphBuilder& b, Value* x, int64_t heads, int64_t d, float q_scale) {
  const int64_t c = x->shape()[1], tokens = x->shape()[0], width = heads * d;
  Value* qkv = b.op("Gemm", {x, b.randomConstant({c, 3 * width}, 11), b.randomConstant({3 * width}, 12)});
  Value* view = b.op("Reshape", {qkv, b.int64s({tokens, 1, 3 * width})});
  HeadSplit s;
  Value** parts[3] = {&s.q, &s.k, &s.v};
  for (int64_t i = 0; i < 3; ++i) {
    Value* part = b.op("Slice", {view, b.int64s({i * width}), b.int64s({(i + 1) * width}), b.int64s({2})});
    Value* h = b.op("Reshape", {part, b.int64s({tokens, heads, d})});
    if (i == 0) h = b.op("Mul", {h, b.scalar(q_scale)});
    *parts[i] = b.op("Transpose", {h}, attrs({{"perm", i == 1 ? kKeysLast : kHeadsFirst}}));
  }
  return s;
}

std::unique_ptr<Graph> attentionBlock(int64_t tokens, int64_t heads, int64_t d) {
  GraphBuilder b;
  Value* x = b.input("x", {tokens, heads * d});
  const HeadSplit s = exportedHeadSplit(b, x, heads, d, 0.25f);
  Value* scores = b.op("Softmax", {b.op("MatMul", {s.q, s.k})}, attrs({{"axis", int64_t{-1}}}));
  b.output(b.op("MatMul", {scores, s.v}));
  return b.release();
}

TEST(PassAttentionCleanup, HeadSplitSharesOneReshapeAndTheQvTranspose) {
  auto g = attentionBlock(64, 4, 16);
  auto r = runPassChecked(*g, "attention_cleanup", 1e-5);
  EXPECT_EQ(countOps(*g, "Mul"), 0u) << "the q scale is in the Gemm's q columns";
  // After the pass alone, CSE and merge_reshapes still have to merge the per-part copies.
  auto original = attentionBlock(64, 4, 16);
  optimize(*g);
  EXPECT_EQ(countOps(*g, "Reshape"), 1u);
  EXPECT_EQ(countOps(*g, "Transpose"), 2u) << "q and v share one, k keeps its own";
  EXPECT_EQ(countOps(*g, "Slice"), 3u);
  passtest::expectSameResults(*original, *g, 1e-5);
}

TEST(PassAttentionCleanup, BeforeItTheSplitHadNineViewOps) {
  auto g = attentionBlock(64, 4, 16);
  OptimizeOptions o;
  o.disable_passes = {"attention_cleanup"};
  optimize(*g, o);
  EXPECT_GE(countOps(*g, "Reshape") + countOps(*g, "Transpose"), 6u) << "the case must need the pass";
}

// q, k and v as three Linears of the same input (how many exports write them): one projection, and
// then the same split as the fused export. The weights are square, so a transB not undone in the
// merge would still type-check; the differential check catches it.
std::unique_ptr<Graph> splitProjections(bool with_bias) {
  GraphBuilder b;
  Value* x = b.input("x", {12, 16});
  Value* parts[3];
  for (int i = 0; i < 3; ++i) {
    std::vector<Value*> ins{x, b.randomConstant({16, 16}, 80 + i)};
    if (with_bias) ins.push_back(b.randomConstant({16}, 90 + i));
    // The k Gemm stores its weight transposed (transB), as ONNX Linear exports do: the merge lays
    // it out as [K, N] like the others.
    const Attributes a = with_bias && i == 1 ? attrs({{"transB", int64_t{1}}}) : Attributes{};
    Value* p = b.op(with_bias ? "Gemm" : "MatMul", ins, a);
    p = b.op("Reshape", {p, b.int64s({12, 2, 8})});
    parts[i] = b.op("Transpose", {p}, attrs({{"perm", i == 1 ? kKeysLast : kHeadsFirst}}));
  }
  Value* scores = b.op("Softmax", {b.op("MatMul", {parts[0], parts[1]})}, attrs({{"axis", int64_t{-1}}}));
  b.output(b.op("MatMul", {scores, parts[2]}));
  return b.release();
}

TEST(PassAttentionCleanup, SplitProjectionsBecomeOne) {
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "Gemm" : "MatMul");
    auto g = splitProjections(with_bias);
    auto original = splitProjections(with_bias);
    runPassChecked(*g, "attention_cleanup", 1e-5, 3, PassTarget{nullptr, NpuDType::Float16, {}});
    EXPECT_EQ(countOps(*g, with_bias ? "Gemm" : "MatMul"), with_bias ? 1u : 3u)
        << "one projection (+ the two attention MatMuls)";
    optimize(*g);
    EXPECT_EQ(countOps(*g, "Reshape"), 1u);
    EXPECT_EQ(countOps(*g, "Transpose"), 2u);
    passtest::expectSameResults(*original, *g, 1e-5);
  }
}

TEST(PassAttentionCleanup, ProjectionsOfDifferentInputsStaySeparate) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 8});
  Value* y = b.input("y", {4, 8});
  b.output(b.op("Gemm", {x, b.randomConstant({8, 8}, 1), b.randomConstant({8}, 2)}));
  b.output(b.op("Gemm", {y, b.randomConstant({8, 8}, 3), b.randomConstant({8}, 4)}));
  EXPECT_EQ(runPassChecked(b.graph(), "attention_cleanup", 1e-5).changes, 0u);
}

// Sibling projections merge only in a float build: in INT8 the merged output would have one scale
// for parts whose ranges may differ ~1000x (hand_landmark_lite's pixel and world landmarks, which
// rounded to zero merged), and the weights do not predict the ranges.
TEST(PassAttentionCleanup, SiblingProjectionsMergeOnlyInAFloatBuild) {
  const PassTarget fp16{nullptr, NpuDType::Float16, {}};
  for (std::optional<PassTarget> target : {std::optional<PassTarget>{}, std::optional<PassTarget>{PassTarget{}}}) {
    SCOPED_TRACE(target ? "int8 target" : "no target");
    auto g = splitProjections(/*with_bias=*/true);
    auto r = runPassChecked(*g, "attention_cleanup", 1e-5, 3, target);
    EXPECT_EQ(countOps(*g, "Gemm"), 3u);
    bool reason = false;
    for (const MatchFailure& f : r.ctx.match_failures) reason |= f.reason.find("share one scale") != std::string::npos;
    EXPECT_TRUE(reason) << "the refusal says why";
  }
  auto g = splitProjections(/*with_bias=*/true);
  runPassChecked(*g, "attention_cleanup", 1e-5, 3, fp16);
  EXPECT_EQ(countOps(*g, "Gemm"), 1u);
}

TEST(PassAttentionCleanup, ScaleStaysWhenAnotherReaderSeesItsColumns) {
  // A fourth reader takes columns overlapping q: scaling the weights would change what it reads.
  GraphBuilder b;
  Value* x = b.input("x", {8, 16});
  const HeadSplit s = exportedHeadSplit(b, x, 2, 8, 0.5f);
  Value* view = s.q->producer()->input(0)->producer()->input(0)->producer()->input(0)->producer()->input(0);
  ASSERT_EQ(view->producer()->opType(), "Reshape");
  b.output(b.op("Slice", {view, b.int64s({8}), b.int64s({24}), b.int64s({2})}));
  b.output(s.q);
  b.output(s.k);
  b.output(s.v);
  auto r = runPassChecked(b.graph(), "attention_cleanup", 1e-5);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
  EXPECT_TRUE(r.failedWith("reads some of the same columns"));
}

TEST(PassAttentionCleanup, ScaleIsNotFoldedBelowLevel3) {
  auto g = attentionBlock(16, 2, 8);
  runPassChecked(*g, "attention_cleanup", 0.0, 2);  // the data-movement rewrites stay bit-exact
  EXPECT_EQ(countOps(*g, "Mul"), 1u);
}

TEST(PassAttentionCleanup, ReshapeThatDoesNotSplitOnHeadBoundariesStays) {
  // Parts of 24 columns viewed as [tokens, 3, 8]: the cut at 24 is a whole head, but 36 is not a
  // multiple of 8, so that Slice cannot move below a shared Reshape.
  GraphBuilder b;
  Value* x = b.input("x", {4, 72});
  Value* a = b.op("Slice", {x, b.int64s({0}), b.int64s({24}), b.int64s({1})});
  Value* c = b.op("Slice", {x, b.int64s({36}), b.int64s({60}), b.int64s({1})});
  b.output(b.op("Reshape", {a, b.int64s({4, 3, 8})}));
  b.output(b.op("Reshape", {c, b.int64s({4, 3, 8})}));
  auto r = runPassChecked(b.graph(), "attention_cleanup", 0.0);
  EXPECT_EQ(r.changes, 1u) << "only the Slice at 0";
  EXPECT_TRUE(r.failedWith("does not split the cut axis"));
}

TEST(PassAttentionCleanup, ALoneTransposeAfterASliceStaysBelowIt) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 4, 5});
  Value* a = b.op("Slice", {x, b.int64s({0}), b.int64s({2}), b.int64s({1})});
  Value* c = b.op("Slice", {x, b.int64s({2}), b.int64s({4}), b.int64s({1})});
  b.output(b.op("Transpose", {a}, attrs({{"perm", kHeadsFirst}})));
  b.output(b.op("Transpose", {c}, attrs({{"perm", kKeysLast}})));
  auto r = runPassChecked(b.graph(), "attention_cleanup", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("would move more data"));
}

}  // namespace
}  // namespace npuc
