// extract_common_factor: the same elementwise op with the same constants on every Concat input
// moves after the Concat; different constants, constants varying along the axis, extra users and
// repeated inputs (CSE's territory) stop it. And with CSE in the pipeline, repeated identical ops
// on one value are computed once.
#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

TEST(PassExtractCommonFactor, BinaryOpWithSameConstantMoves) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {1, 2, 4});
  Value* x2 = b.input("x2", {1, 3, 4});
  Value* c = b.randomConstant({4}, 1);  // per last dim: invariant along the concat axis 1
  Value* m1 = b.op("Mul", {x1, c});
  Value* m2 = b.op("Mul", {b.randomConstant({4}, 1), x2});  // equal constant by value, commuted
  b.output(b.op("Concat", {m1, m2}, attrs({{"axis", int64_t{1}}})));
  runPassChecked(b.graph(), "canonicalize", 0.0);
  auto r = runPassChecked(b.graph(), "extract_common_factor", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
  EXPECT_EQ(b.graph().lastNode()->opType(), "Mul");
}

TEST(PassExtractCommonFactor, UnaryOpWithAttributesMoves) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {2, 3});
  Value* x2 = b.input("x2", {2, 5});
  Value* x3 = b.input("x3", {2, 1});
  auto leaky = attrs({{"alpha", 0.2f}});
  Value* c =
      b.op("Concat",
           {b.op("LeakyRelu", {x1}, leaky), b.op("LeakyRelu", {x2}, leaky), b.op("LeakyRelu", {x3}, leaky)},
           attrs({{"axis", int64_t{-1}}}));
  b.output(c);
  EXPECT_EQ(runPassChecked(b.graph(), "extract_common_factor", 0.0).changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "LeakyRelu"), 1u);
}

// yolov5s's C3 block: Concat(Relu(Conv(a)), Relu(Conv(b))). Each Relu fuses into its Conv (NPU
// fusion rules, oneDNN post-ops); moved after the Concat it would be a task of its own.
TEST(PassExtractCommonFactor, ActivationFusedIntoItsConvStays) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 6, 6});
  Value* r1 = b.op("Relu", {b.op("Conv", {x, b.randomConstant({3, 4, 1, 1}, 1)})});
  Value* r2 = b.op("Relu", {b.op("Conv", {x, b.randomConstant({5, 4, 1, 1}, 2)})});
  b.output(b.op("Concat", {r1, r2}, attrs({{"axis", int64_t{1}}})));
  auto r = runPassChecked(b.graph(), "extract_common_factor", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("fuses into the Conv"));
  EXPECT_EQ(countOps(b.graph(), "Relu"), 2u);
}

TEST(PassExtractCommonFactor, DifferentConstantsOrAttributesStay) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {2, 3});
  Value* x2 = b.input("x2", {2, 3});
  b.output(b.op("Concat", {b.op("Add", {x1, b.scalar(1.0f)}), b.op("Add", {x2, b.scalar(2.0f)})},
                attrs({{"axis", int64_t{0}}})));
  b.output(b.op(
      "Concat",
      {b.op("LeakyRelu", {x1}, attrs({{"alpha", 0.1f}})), b.op("LeakyRelu", {x2}, attrs({{"alpha", 0.2f}}))},
      attrs({{"axis", int64_t{0}}})));
  auto r = runPassChecked(b.graph(), "extract_common_factor");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("same constants and attributes"));
}

TEST(PassExtractCommonFactor, ConstantVaryingAlongAxisStays) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {3, 4});
  Value* x2 = b.input("x2", {3, 4});
  Value* c = b.randomConstant({3, 1}, 2);  // varies along axis 0, the concat axis
  b.output(b.op("Concat", {b.op("Mul", {x1, c}), b.op("Mul", {x2, c})}, attrs({{"axis", int64_t{0}}})));
  auto r = runPassChecked(b.graph(), "extract_common_factor");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("vary along concat axis"));
}

TEST(PassExtractCommonFactor, BroadcastingOpStays) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {1, 4});
  Value* x2 = b.input("x2", {1, 4});
  Value* c = b.randomConstant({3, 1}, 2);  // broadcasts x to [3,4]
  b.output(b.op("Concat", {b.op("Mul", {x1, c}), b.op("Mul", {x2, c})}, attrs({{"axis", int64_t{1}}})));
  EXPECT_TRUE(runPassChecked(b.graph(), "extract_common_factor").failedWith("broadcasts its input"));
}

TEST(PassExtractCommonFactor, ExtraUserOrGraphOutputStays) {
  GraphBuilder b;
  Value* x1 = b.input("x1", {2, 3});
  Value* x2 = b.input("x2", {2, 3});
  Value* r1 = b.op("Relu", {x1});
  Value* r2 = b.op("Relu", {x2});
  b.output(b.op("Concat", {r1, r2}, attrs({{"axis", int64_t{0}}})));
  b.output(r2);
  auto r = runPassChecked(b.graph(), "extract_common_factor");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("also used outside"));
}

TEST(PassExtractCommonFactor, RepeatedInputIsLeftToCse) {
  // Concat(Relu(x), Relu(x)): hoisting would compute Relu on twice the data; CSE computes it once.
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  b.output(b.op("Concat", {b.op("Relu", {x}), b.op("Relu", {x})}, attrs({{"axis", int64_t{0}}})));
  auto r = runPassChecked(b.graph(), "extract_common_factor");
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("CSE"));
  OptimizationReport rep = optimize(b.graph());
  EXPECT_EQ(countOps(b.graph(), "Relu"), 1u) << rep.toText();
  EXPECT_EQ(rep.changesBy("common_subexpression_elimination"), 1u);
}

TEST(PassExtractCommonFactor, PipelineComputesRepeatedOpsOnce) {
  // x -> Mul(c) twice (equal constants held by two values) and y -> Mul(c), all concatenated:
  // CSE merges the two Muls of x; the hoist then declines (x would be concatenated twice).
  GraphBuilder b;
  Value* x = b.input("x", {2, 4});
  Value* y = b.input("y", {3, 4});
  Value* a = b.op("Mul", {x, b.scalar(3.0f)});
  Value* a2 = b.op("Mul", {x, b.scalar(3.0f)});
  Value* c = b.op("Mul", {y, b.scalar(3.0f)});
  b.output(b.op("Concat", {a, c}, attrs({{"axis", int64_t{0}}})));
  b.output(b.op("Concat", {a2, b.op("Exp", {y})}, attrs({{"axis", int64_t{0}}})));
  auto original = b.graph().clone();
  OptimizeOptions o;
  o.verify_each = true;
  OptimizationReport rep = optimize(b.graph(), o);
  passtest::expectSameResults(*original, b.graph(), 0.0);
  // Two of the three equal scalar constants, then the duplicate Mul.
  EXPECT_EQ(rep.changesBy("common_subexpression_elimination"), 3u) << rep.toText();
  EXPECT_EQ(countOps(b.graph(), "Mul"), 2u) << b.graph().dump();
}

}  // namespace
}  // namespace npuc
