// fuse_hardsigmoid: Clip(x + b, 0, c) * (1/c) -> HardSigmoid(alpha = 1/c, beta = b/c), for the
// relu6(x + 3) / 6 spelling and another shift and bound; refused for a lower bound other than 0, a
// scale that is not 1/c, a shared Clip, and below level 3. Every case is differential against the
// original graph, and the x * hardsigmoid(x) product still becomes HardSwish in the pipeline.
#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

// x in [-8, 8]: both clamps of the hard sigmoid are exercised.
Value* hardSigmoidChain(GraphBuilder& b, Value* x, float shift, float low, float high, float scale) {
  Value* clip = b.op("Clip", {b.op("Add", {x, b.scalar(shift)}), b.scalar(low), b.scalar(high)});
  return b.op("Mul", {clip, b.scalar(scale)});
}

TEST(PassFuseHardSigmoid, Relu6OfXPlus3Over6BecomesOneHardSigmoid) {
  for (const auto& [shift, high] : {std::pair<float, float>{3.0f, 6.0f}, {2.5f, 5.0f}}) {
    GraphBuilder b;
    Value* x = b.op("Relu", {b.input("x", {1, 8, 4, 4})});
    b.output(hardSigmoidChain(b, b.op("Sub", {x, b.scalar(4.0f)}), shift, 0.0f, high, 1.0f / high));
    auto r = runPassChecked(b.graph(), "fuse_hardsigmoid", 1e-6);
    EXPECT_EQ(r.changes, 1u);
    EXPECT_EQ(countOps(b.graph(), "HardSigmoid"), 1u) << b.graph().dump();
    EXPECT_EQ(countOps(b.graph(), "Clip") + countOps(b.graph(), "Add") + countOps(b.graph(), "Mul"), 0u);
    for (const Node* n : b.graph().nodes()) {
      if (n->opType() != "HardSigmoid") continue;
      EXPECT_FLOAT_EQ(n->attrs().f("alpha"), 1.0f / high);
      EXPECT_FLOAT_EQ(n->attrs().f("beta"), shift / high);
    }
  }
}

TEST(PassFuseHardSigmoidRefuses, OtherBoundsScalesSharedClipAndLowLevels) {
  struct Case {
    float low, high, scale;
    const char* reason;
  };
  for (const Case& c : {Case{-1.0f, 6.0f, 1.0f / 6.0f, "lower bound"}, Case{0.0f, 6.0f, 0.2f, "scale"}}) {
    GraphBuilder b;
    b.output(hardSigmoidChain(b, b.input("x", {2, 3}), 3.0f, c.low, c.high, c.scale));
    auto r = runPassChecked(b.graph(), "fuse_hardsigmoid");
    EXPECT_EQ(r.changes, 0u) << c.reason;
    EXPECT_TRUE(r.failedWith(c.reason)) << c.reason;
  }
  GraphBuilder shared;
  Value* clip = shared.op("Clip", {shared.op("Add", {shared.input("x", {2, 3}), shared.scalar(3.0f)}),
                                   shared.scalar(0.0f), shared.scalar(6.0f)});
  shared.output(shared.op("Mul", {clip, shared.scalar(1.0f / 6.0f)}));
  shared.output(clip);  // the Clip is a graph output: it cannot disappear
  EXPECT_EQ(runPassChecked(shared.graph(), "fuse_hardsigmoid").changes, 0u);

  GraphBuilder low_level;
  low_level.output(hardSigmoidChain(low_level, low_level.input("x", {2, 3}), 3.0f, 0.0f, 6.0f, 1.0f / 6.0f));
  OptimizeOptions level2;
  level2.optimization_level = 2;
  optimize(low_level.graph(), level2);
  EXPECT_EQ(countOps(low_level.graph(), "HardSigmoid"), 0u);  // changes numerics: level 3 only
}

// In the whole pipeline x * (relu6(x + 3) / 6) ends as one HardSwish, as before this pass.
TEST(PassFuseHardSigmoid, XTimesHardSigmoidStillBecomesHardSwish) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 3, 3});
  b.output(b.op("Mul", {x, hardSigmoidChain(b, x, 3.0f, 0.0f, 6.0f, 1.0f / 6.0f)}));
  std::unique_ptr<Graph> original = b.graph().clone();
  optimize(b.graph());
  EXPECT_EQ(countOps(b.graph(), "HardSwish"), 1u) << b.graph().dump();
  EXPECT_EQ(b.graph().nodeList().size(), 1u);
  passtest::expectSameResults(*original, b.graph(), 1e-5);
}

}  // namespace
}  // namespace npuc
