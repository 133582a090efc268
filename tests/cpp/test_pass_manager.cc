// Pass infrastructure: the Rewriter's bookkeeping, the greedy driver's fixed point and its
// non-convergence report, the pass manager's levels / disable_passes / report / stage dumps, the
// registry, and the optimize() pipeline end to end.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/core/greedy_driver.h"
#include "passes/core/matcher.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::GraphBuilder;

// Neg(Neg(x)) -> x.
class DoubleNeg : public RewritePattern {
 public:
  DoubleNeg() : RewritePattern("double_neg", {"Neg"}) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    if (m::matchRoot(root, m::op("Neg", m::op("Neg", m::any(&x))), rw).failed()) return failure();
    if (!rw.canReplace(*root.output(), *x)) return rw.notifyMatchFailure(root, "output name");
    rw.replaceOp(&root, {x});
    return success();
  }
};

// Two patterns that undo each other: Abs <-> Neg by renaming the op in place.
class Rename : public RewritePattern {
 public:
  Rename(const char* from, const char* to) : RewritePattern(from, {from}), to_(to) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    root.setOpType(to_);
    rw.notifyModified(&root);
    return success();
  }

 private:
  const char* to_;
};

TEST(PassRewriter, ReplaceOpErasesDeadProducers) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* n1 = b.op("Neg", {x});
  Value* n2 = b.op("Neg", {n1});
  Value* out = b.op("Relu", {n2}, {}, "relu");
  b.output(out);
  PassContext ctx;
  PatternSet set;
  set.add<DoubleNeg>();
  EXPECT_EQ(applyPatternsGreedily(b.graph(), set, ctx), 1u);
  EXPECT_EQ(b.graph().numNodes(), 1u);  // both Negs gone: the inner one died with the outer
  EXPECT_EQ(b.graph().findNode("relu")->input(0), x);
  b.graph().verify();
}

TEST(PassRewriter, GreedyDriverReachesFixedPointThroughChains) {
  // Six Negs in a row collapse completely, whatever order the worklist visits them in.
  GraphBuilder b;
  Value* v = b.input("x", {4});
  for (int i = 0; i < 6; ++i) v = b.op("Neg", {v});
  Value* out = b.op("Relu", {v});
  b.output(out);
  auto original = b.graph().clone();
  PassContext ctx;
  PatternSet set;
  set.add<DoubleNeg>();
  EXPECT_EQ(applyPatternsGreedily(b.graph(), set, ctx), 3u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Neg"), 0u);
  EXPECT_TRUE(ctx.warnings.empty());
  passtest::expectSameResults(*original, b.graph(), 0.0);
}

TEST(PassRewriter, GraphOutputKeepsItsName) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* r = b.op("Relu", {x});
  Value* n2 = b.op("Neg", {b.op("Neg", {r})}, {}, "outer");
  n2->setName("y");
  b.output(n2);
  PassContext ctx;
  PatternSet set;
  set.add<DoubleNeg>();
  EXPECT_EQ(applyPatternsGreedily(b.graph(), set, ctx), 1u);
  ASSERT_EQ(b.graph().outputs().size(), 1u);
  EXPECT_EQ(b.graph().outputs()[0], r);
  EXPECT_EQ(r->name(), "y");
}

TEST(PassRewriter, GraphInputCannotStandInForGraphOutput) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* y = b.op("Neg", {b.op("Neg", {x})}, {}, "outer");
  b.output(y);
  PassContext ctx;
  PatternSet set;
  set.add<DoubleNeg>();
  EXPECT_EQ(applyPatternsGreedily(b.graph(), set, ctx), 0u);
  ASSERT_EQ(ctx.match_failures.size(), 1u);  // recorded once, not once per sweep
  EXPECT_EQ(ctx.match_failures[0].node, "outer");
  EXPECT_EQ(ctx.match_failures[0].pattern, "double_neg");
}

TEST(PassRewriter, NonConvergenceIsReportedNotLooped) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  b.output(b.op("Abs", {x}));
  PassContext ctx;
  ctx.max_greedy_iterations = 3;
  PatternSet set;
  set.add<Rename>("Abs", "Neg");
  set.add<Rename>("Neg", "Abs");
  const size_t changes = applyPatternsGreedily(b.graph(), set, ctx);
  EXPECT_GT(changes, 0u);
  ASSERT_FALSE(ctx.warnings.empty());
  EXPECT_NE(ctx.warnings[0].find("did not settle"), std::string::npos);
}

TEST(PassRewriter, NumericsChangingPatternsNeedLevel3) {
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* d = b.op("Div", {x, b.scalar(4.0f)});
  b.output(d);
  PassContext ctx;
  ctx.optimization_level = 2;
  EXPECT_EQ(createPass("canonicalize")->run(b.graph(), ctx), 0u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Div"), 1u);
  ctx.optimization_level = 3;
  EXPECT_EQ(createPass("canonicalize")->run(b.graph(), ctx), 1u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Mul"), 1u);
}

TEST(PassRegistry, NamesMatchPasses) {
  const auto names = registeredPassNames();
  EXPECT_GE(names.size(), 9u);
  for (const PassInfo& info : registeredPasses()) {
    auto pass = info.create();
    EXPECT_STREQ(pass->name(), info.name);
    EXPECT_GT(std::string(pass->description()).size(), 10u);
  }
  try {
    createPass("fuse_everything");
    FAIL() << "unknown pass accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("canonicalize"), std::string::npos) << "lists valid names";
  }
}

// Conv -> BatchNormalization -> Identity -> Relu -> Reshape -> Reshape (6 nodes)
std::unique_ptr<Graph> smallNet() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 8, 8});
  Value* w = b.randomConstant({4, 3, 3, 3}, 1);
  Value* conv = b.op("Conv", {x, w}, passtest::attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "conv");
  Value* bn = b.op("BatchNormalization",
                   {conv, b.randomConstant({4}, 2, 0.5f, 1.5f), b.randomConstant({4}, 3),
                    b.randomConstant({4}, 4), b.randomConstant({4}, 5, 0.5f, 2.0f)},
                   {}, "bn");
  Value* id = b.op("Identity", {bn});
  Value* relu = b.op("Relu", {id});
  Value* r1 = b.op("Reshape", {relu, b.int64s({1, 4, 64})});
  Value* r2 = b.op("Reshape", {r1, b.int64s({4, 64})});
  b.output(r2);
  return b.release();
}

TEST(PassManagerTest, LevelsAndDisabledPasses) {
  {
    auto g = smallNet();
    const size_t before = g->numNodes();
    OptimizeOptions o;
    o.optimization_level = 0;
    OptimizationReport r = optimize(*g, o);
    EXPECT_EQ(g->numNodes(), before);
    EXPECT_TRUE(r.fired.empty());
  }
  {
    // Level 2: exact passes only; BatchNorm folding reassociates, so it waits for level 3.
    auto g = smallNet();
    OptimizeOptions o;
    o.optimization_level = 2;
    o.verify_each = true;
    OptimizationReport r = optimize(*g, o);
    EXPECT_EQ(passtest::countOps(*g, "BatchNormalization"), 1u);
    EXPECT_EQ(passtest::countOps(*g, "Identity"), 0u);
    EXPECT_EQ(passtest::countOps(*g, "Reshape"), 1u);
    EXPECT_NE(std::find(r.skipped_for_level.begin(), r.skipped_for_level.end(), "fold_batchnorm"),
              r.skipped_for_level.end());
  }
  {
    auto g = smallNet();
    OptimizeOptions o;
    o.disable_passes = {"merge_reshapes"};
    OptimizationReport r = optimize(*g, o);
    EXPECT_EQ(passtest::countOps(*g, "Reshape"), 2u);
    EXPECT_EQ(r.changesBy("merge_reshapes"), 0u);
    EXPECT_EQ(r.disabled, std::vector<std::string>{"merge_reshapes"});
  }
  OptimizeOptions bad;
  bad.disable_passes = {"fold_bn"};
  auto g = smallNet();
  EXPECT_THROW(optimize(*g, bad), ConfigError);
  bad.disable_passes.clear();
  bad.optimization_level = 4;
  EXPECT_THROW(optimize(*g, bad), ConfigError);
}

// Target-specific fusion passes also run in optimize(); the node counts below are about the
// generic rewrites, so those are switched off by name.
std::vector<std::string> passesOtherThan(const std::vector<std::string>& keep) {
  std::vector<std::string> off;
  for (const std::string& name : registeredPassNames()) {
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) off.push_back(name);
  }
  return off;
}

TEST(PassManagerTest, FullPipelineIsDifferentiallyCorrectAndReports) {
  auto g = smallNet();
  auto original = g->clone();
  std::vector<std::string> stages;
  OptimizeOptions o;
  o.verify_each = true;
  o.disable_passes = passesOtherThan({"canonicalize", "constant_folding", "dead_code_elimination",
                                      "common_subexpression_elimination", "fold_batchnorm", "merge_reshapes",
                                      "compose_transposes", "merge_slices", "extract_common_factor"});
  o.on_stage = [&](const std::string& stage, int index, const Graph& graph) {
    EXPECT_EQ(index, static_cast<int>(stages.size()));
    graph.verify();
    stages.push_back(stage);
  };
  OptimizationReport r = optimize(*g, o);
  passtest::expectTypesConsistent(*g);
  passtest::expectSameResults(*original, *g, 1e-5);
  EXPECT_EQ(r.nodes_before, 6u);
  EXPECT_EQ(g->numNodes(), 3u);  // Conv, Relu, Reshape
  EXPECT_EQ(r.nodes_after, 3u);
  EXPECT_EQ(r.changesBy("fold_batchnorm"), 1u);
  EXPECT_EQ(r.changesBy("merge_reshapes"), 1u);
  // "import", then one dump per stage of the pipeline, in order (plus "optimized" if a later
  // round changed the graph).
  std::vector<std::string> expected{"import"};
  for (const auto& stage : optimizationPipeline()) expected.push_back(stage.first);
  ASSERT_GE(stages.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(stages.begin(), stages.begin() + expected.size()), expected);
  EXPECT_EQ(stages[1], "canonical");
  EXPECT_EQ(stages.size() == expected.size() || stages.back() == "optimized", true);
  const std::string text = r.toText();
  EXPECT_NE(text.find("6 -> 3 nodes"), std::string::npos) << text;
  EXPECT_TRUE(r.match_failures.empty()) << text;
  EXPECT_NE(text.find("fold_batchnorm: 1"), std::string::npos) << text;
  EXPECT_TRUE(r.warnings.empty()) << text;
}

TEST(PassManagerTest, SecondRunChangesNothing) {
  auto g = smallNet();
  optimize(*g);
  const std::string before = g->dump();
  OptimizationReport again = optimize(*g);
  EXPECT_TRUE(again.fired.empty()) << again.toText();
  EXPECT_EQ(again.rounds, 1u);
  EXPECT_EQ(g->dump(), before);
}

TEST(PassManagerTest, MatchFailuresAreReported) {
  // The Conv output feeds the BatchNormalization and a second consumer: folding must not fire and
  // the report must say why, naming the node.
  GraphBuilder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Value* conv = b.op("Conv", {x, b.randomConstant({2, 2, 1, 1}, 1)});
  Value* bn = b.op("BatchNormalization",
                   {conv, b.randomConstant({2}, 2), b.randomConstant({2}, 3), b.randomConstant({2}, 4),
                    b.randomConstant({2}, 5, 0.5f, 1.0f)},
                   {}, "the_bn");
  b.output(bn);
  b.output(b.op("Relu", {conv}));
  OptimizationReport r = optimize(b.graph());
  EXPECT_EQ(r.changesBy("fold_batchnorm"), 0u);
  bool found = false;
  for (const MatchFailure& f : r.match_failures) {
    found |=
        f.pass == "fold_batchnorm" && f.node == "the_bn" && f.reason.find("2 users") != std::string::npos;
  }
  EXPECT_TRUE(found) << r.toText();
  EXPECT_NE(r.toText().find("the_bn"), std::string::npos);
}

}  // namespace
}  // namespace npuc
