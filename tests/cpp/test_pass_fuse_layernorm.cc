// fuse_layernorm: the LayerNorm spellings exporters produce (eps on either side, Pow or x*x,
// Div or Reciprocal*Mul, negative axes, one or two normalized dims, Casts around the core, with
// or without the affine part, gamma on either side) fuse into one LayerNormalization; RMSNorm
// into ai.npuc RMSNorm; refusals are recorded with their reason. Every case is differential.
#include "opset/registry.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

constexpr double kNormTolerance = 1e-4;  // fused mean/variance accumulate in another order

struct LnSpell {
  bool pow = true;          // Pow(d, 2) vs Mul(d, d)
  bool eps_first = false;   // Add(eps, var) vs Add(var, eps)
  bool reciprocal = false;  // d * Reciprocal(Sqrt) vs d / Sqrt
  bool gamma = true;
  bool beta = true;
  bool gamma_first = false;  // Mul(gamma, n)
  std::vector<int64_t> axes1 = {-1};
  std::vector<int64_t> axes2 = {-1};
  float exponent = 2.0f;
  int64_t keepdims2 = 1;
  Shape gamma_shape = {};  // default: the normalized shape
};

struct LnGraph {
  Value* x = nullptr;
  Value* d = nullptr;
  Value* var = nullptr;
  Value* sqrt = nullptr;
  Value* out = nullptr;
};

// Builds the decomposed LayerNorm of `x` (normalized dims from spell.axes2).
LnGraph buildLayerNorm(GraphBuilder& b, Value* x, const LnSpell& s) {
  LnGraph g;
  g.x = x;
  Value* mean = b.op("ReduceMean", {x, b.int64s(s.axes1)});
  g.d = b.op("Sub", {x, mean});
  Value* sq = s.pow ? b.op("Pow", {g.d, b.scalar(s.exponent)}) : b.op("Mul", {g.d, g.d});
  g.var = b.op("ReduceMean", {sq, b.int64s(s.axes2)}, attrs({{"keepdims", s.keepdims2}}));
  Value* eps = b.scalar(1e-5f);
  Value* ve = s.eps_first ? b.op("Add", {eps, g.var}) : b.op("Add", {g.var, eps});
  g.sqrt = b.op("Sqrt", {ve});
  Value* n = s.reciprocal ? b.op("Mul", {b.op("Reciprocal", {g.sqrt}), g.d})
                          : b.op("Div", {g.d, g.sqrt}, {}, "ln_div");
  Shape norm(x->shape().end() - static_cast<std::ptrdiff_t>(s.axes2.size()), x->shape().end());
  if (s.gamma) {
    Value* gamma = b.randomConstant(s.gamma_shape.empty() ? norm : s.gamma_shape, 7, 0.5f, 1.5f);
    n = s.gamma_first ? b.op("Mul", {gamma, n}) : b.op("Mul", {n, gamma});
  }
  if (s.beta) n = b.op("Add", {b.randomConstant(norm, 8), n});
  g.out = n;
  return g;
}

void expectFusedLayerNorm(Graph& g, int64_t axis, bool has_bias) {
  auto r = runPassChecked(g, "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 1u);
  ASSERT_EQ(countOps(g, "LayerNormalization"), 1u) << g.dump();
  for (const char* op : {"ReduceMean", "Sub", "Sqrt", "Div", "Pow", "Reciprocal"})
    EXPECT_EQ(countOps(g, op), 0u) << op;
  for (const Node* n : g.nodes()) {
    if (n->opType() != "LayerNormalization") continue;
    EXPECT_EQ(n->attrs().i("axis"), axis);
    EXPECT_FLOAT_EQ(n->attrs().f("epsilon"), 1e-5f);
    EXPECT_EQ(n->hasInput(2), has_bias);
  }
}

class PassFuseLayerNormSpellings : public ::testing::TestWithParam<LnSpell> {};

TEST_P(PassFuseLayerNormSpellings, FusesToOneLayerNormalization) {
  const LnSpell s = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 4, 6});
  b.output(buildLayerNorm(b, x, s).out);
  expectFusedLayerNorm(b.graph(), 4 - static_cast<int64_t>(s.axes2.size()), s.beta);
  EXPECT_EQ(b.graph().numNodes(), 1u);
}

LnSpell spell(std::function<void(LnSpell&)> f) {
  LnSpell s;
  f(s);
  return s;
}

INSTANTIATE_TEST_SUITE_P(Exporters, PassFuseLayerNormSpellings,
                         ::testing::Values(LnSpell{}, spell([](LnSpell& s) { s.eps_first = true; }),
                                           spell([](LnSpell& s) { s.pow = false; }),
                                           spell([](LnSpell& s) { s.reciprocal = true; }),
                                           spell([](LnSpell& s) { s.gamma_first = true; }),
                                           spell([](LnSpell& s) { s.beta = false; }),
                                           spell([](LnSpell& s) { s.gamma = s.beta = false; }),
                                           spell([](LnSpell& s) {
                                             s.axes1 = {3};
                                             s.axes2 = {-1};
                                           }),
                                           spell([](LnSpell& s) {
                                             s.axes1 = {-2, -1};
                                             s.axes2 = {3, 2};
                                           }),
                                           spell([](LnSpell& s) {
                                             s.axes1 = s.axes2 = {-3, -2, -1};
                                             s.pow = false;
                                             s.reciprocal = true;
                                           }),
                                           spell([](LnSpell& s) {
                                             s.gamma_shape = {1, 1, 6};
                                           })));

TEST(PassFuseLayerNorm, CastsAroundTheCoreAreKept) {
  // Mixed-precision export: float64 activations, statistics in float32, affine back in float64.
  GraphBuilder b;
  Value* x = b.input("x", {2, 5, 8});
  Value* x64 = b.op("Cast", {x}, attrs({{"to", int64_t{11}}}));
  Value* x32 = b.op("Cast", {x64}, attrs({{"to", int64_t{1}}}));
  LnSpell s;
  s.gamma = s.beta = false;
  Value* n = b.op("Cast", {buildLayerNorm(b, x32, s).out}, attrs({{"to", int64_t{11}}}));
  Value* g64 = b.constant(passtest::randomTensor({8}, 3, 0.5f, 1.5f).castTo(DType::Float64));
  Value* b64 = b.constant(passtest::randomTensor({8}, 4).castTo(DType::Float64));
  b.output(b.op("Add", {b.op("Mul", {n, g64}), b64}));
  expectFusedLayerNorm(b.graph(), 2, true);
  EXPECT_EQ(countOps(b.graph(), "Cast"), 3u);  // in, in, and back after the fused op
  EXPECT_EQ(countOps(b.graph(), "Mul"), 0u);
}

TEST(PassFuseLayerNorm, ResultThatIsAGraphOutputKeepsItsName) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 7});
  Value* out = buildLayerNorm(b, x, {}).out;
  out->setName("y");
  b.output(out);
  expectFusedLayerNorm(b.graph(), 1, true);
  EXPECT_EQ(b.graph().outputs()[0]->producer()->opType(), "LayerNormalization");
}

// ---------------------------------------------------------------- refusals

struct Refusal {
  LnSpell spell;
  const char* reason;
};

class PassFuseLayerNormRefusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(PassFuseLayerNormRefusals, RecordsWhy) {
  GraphBuilder b;
  // [10, 10, 10] so that even the keepdims=0 variance broadcasts back against the input.
  Value* x = b.input("x", {10, 10, 10});
  b.output(buildLayerNorm(b, x, GetParam().spell).out);
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_EQ(countOps(b.graph(), "LayerNormalization"), 0u);
  EXPECT_TRUE(r.failedWith(GetParam().reason)) << "want '" << GetParam().reason << "'";
  EXPECT_TRUE(r.failedWith("LayerNorm at node 'ln_div' not fused"));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PassFuseLayerNormRefusals,
                         ::testing::Values(Refusal{spell([](LnSpell& s) {
                                                     s.gamma_shape = {10, 1};
                                                   }),
                                                   "gamma shape [10,1] != normalized shape [10]"},
                                           Refusal{spell([](LnSpell& s) {
                                                     s.keepdims2 = 0;
                                                     s.gamma = s.beta = false;
                                                   }),
                                                   "keepdims=0"},
                                           Refusal{spell([](LnSpell& s) { s.exponent = 3.0f; }), "is not 2"},
                                           Refusal{spell([](LnSpell& s) {
                                                     s.axes2 = {1, 2};
                                                     s.gamma = s.beta = false;
                                                   }),
                                                   "reduce different axes"},
                                           Refusal{spell([](LnSpell& s) {
                                                     s.axes1 = s.axes2 = {1};
                                                     s.gamma = s.beta = false;
                                                   }),
                                                   "trailing axes"}));

TEST(PassFuseLayerNorm, CentredValueWithAnotherUserIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 10});
  LnGraph ln = buildLayerNorm(b, x, {});
  b.output(ln.out);
  b.output(b.op("Relu", {ln.d}, {}, "spy"));
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("has another user 'spy'"));
}

TEST(PassFuseLayerNorm, InteriorValueWithTwoUsersIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 10});
  LnGraph ln = buildLayerNorm(b, x, {});
  b.output(ln.out);
  b.output(b.op("Neg", {ln.sqrt}));
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("has 2 users"));
}

TEST(PassFuseLayerNorm, InteriorValueThatIsAGraphOutputIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 10});
  LnGraph ln = buildLayerNorm(b, x, {});
  b.output(ln.out);
  b.output(ln.var);
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("is a graph output"));
}

TEST(PassFuseLayerNorm, NotRunBelowLevel3) {
  GraphBuilder b;
  b.output(buildLayerNorm(b, b.input("x", {2, 10}), {}).out);
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance, /*level=*/2);
  EXPECT_EQ(r.changes, 0u);
}

// ---------------------------------------------------------------- RMSNorm

struct RmsSpell {
  bool reciprocal = false;
  bool gamma = true;
  bool gamma_first = false;
};

class PassFuseRmsNorm : public ::testing::TestWithParam<RmsSpell> {};

TEST_P(PassFuseRmsNorm, FusesToNpucRmsNorm) {
  const RmsSpell s = GetParam();
  GraphBuilder b;
  Value* x = b.input("x", {2, 3, 16});
  Value* ms = b.op("ReduceMean", {b.op("Pow", {x, b.scalar(2.0f)}), b.int64s({-1})});
  Value* r = b.op("Sqrt", {b.op("Add", {b.scalar(1e-6f), ms})});
  Value* n = s.reciprocal ? b.op("Mul", {x, b.op("Reciprocal", {r})}) : b.op("Div", {x, r});
  if (s.gamma) {
    Value* g = b.randomConstant({16}, 5, 0.5f, 1.5f);
    n = s.gamma_first ? b.op("Mul", {g, n}) : b.op("Mul", {n, g});
  }
  b.output(n);
  auto run = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(run.changes, 1u);
  ASSERT_EQ(b.graph().numNodes(), 1u) << b.graph().dump();
  const Node* fused = b.graph().firstNode();
  EXPECT_EQ(fused->opType(), "RMSNorm");
  EXPECT_EQ(fused->domain(), kNpucDomain);
  EXPECT_EQ(fused->attrs().i("axis"), 2);
  EXPECT_FLOAT_EQ(fused->attrs().f("epsilon"), 1e-6f);
}

INSTANTIATE_TEST_SUITE_P(Spellings, PassFuseRmsNorm,
                         ::testing::Values(RmsSpell{}, RmsSpell{true, true, true},
                                           RmsSpell{false, false, false}, RmsSpell{true, true, false}));

TEST(PassFuseRmsNormRefusals, MeanSquareWithTwoUsersAndWrongGamma) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 8});
  Value* ms = b.op("ReduceMean", {b.op("Mul", {x, x}), b.int64s({1})});
  b.output(b.op("Div", {x, b.op("Sqrt", {b.op("Add", {ms, b.scalar(1e-6f)})})}, {}, "rms_a"));
  b.output(ms);
  Value* y = b.input("y", {2, 8});
  Value* ms2 = b.op("ReduceMean", {b.op("Mul", {y, y}), b.int64s({1})});
  Value* n2 = b.op("Div", {y, b.op("Sqrt", {b.op("Add", {ms2, b.scalar(1e-6f)})})}, {}, "rms_b");
  b.output(b.op("Mul", {n2, b.randomConstant({2, 1}, 6)}));
  auto r = runPassChecked(b.graph(), "fuse_layernorm", kNormTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("RMSNorm at node 'rms_a' not fused: interior value"));
  EXPECT_TRUE(r.failedWith("RMSNorm at node 'rms_b' not fused: gamma shape [2,1] != normalized shape [8]"));
}

}  // namespace
}  // namespace npuc
