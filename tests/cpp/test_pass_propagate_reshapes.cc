// propagate_reshapes: views move across LayerNorm/Softmax (rows kept), elementwise ops, Transposes
// and reductions until they merge or cancel. Every case is bit-exact (rtol 0) on random inputs and
// checked against the counts it promises; the transformer residual stream case is the one tiny_vit
// has (a Linear on [1, tokens, C] written as Reshape -> Gemm -> Reshape, twice per block).
#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

size_t viewCount(const Graph& g) {
  return countOps(g, "Reshape") + countOps(g, "Transpose") + countOps(g, "Squeeze") +
         countOps(g, "Unsqueeze");
}

// x [1, t, c] -> LayerNorm -> Reshape [t, c] -> Gemm -> Reshape [1, t, c] -> Add(x) -> ..., `blocks`
// times, then LayerNorm and the mean over tokens ([1, c]).
std::unique_ptr<Graph> residualStream(int64_t t, int64_t c, int blocks) {
  GraphBuilder b;
  Value* x = b.input("x", {1, t, c});
  for (int i = 0; i < blocks; ++i) {
    Value* n = b.op("LayerNormalization", {x, b.randomConstant({c}, 20 + i), b.randomConstant({c}, 30 + i)},
                    attrs({{"axis", int64_t{-1}}}));
    Value* rows = b.op("Reshape", {n, b.int64s({t, c})});
    Value* h = b.op("Gemm", {rows, b.randomConstant({c, 2 * c}, 40 + i), b.randomConstant({2 * c}, 50 + i)});
    h = b.op("Reshape", {h, b.int64s({1, t, 2 * c})});
    h = b.op("Relu", {h});
    h = b.op("Reshape", {h, b.int64s({t, 2 * c})});
    h = b.op("Gemm", {h, b.randomConstant({2 * c, c}, 60 + i)});
    x = b.op("Add", {x, b.op("Reshape", {h, b.int64s({1, t, c})})});
  }
  Value* n = b.op("LayerNormalization", {x, b.randomConstant({c}, 70), b.randomConstant({c}, 71)},
                  attrs({{"axis", int64_t{-1}}}));
  b.output(b.op("ReduceMean", {n, b.int64s({1})}, attrs({{"keepdims", int64_t{0}}})));
  return b.release();
}

TEST(PassPropagateReshapes, ResidualStreamStaysTwoDimensional) {
  auto g = residualStream(16, 8, 2);
  auto original = residualStream(16, 8, 2);
  ASSERT_EQ(viewCount(*g), 8u);
  OptimizeOptions o;
  o.disable_passes = {"propagate_reshapes"};
  auto without = residualStream(16, 8, 2);
  optimize(*without, o);
  EXPECT_GE(viewCount(*without), 4u) << "without the pass the views stay";
  optimize(*g);
  EXPECT_EQ(viewCount(*g), 1u) << "only the input's view to [t, c] is left";
  for (const Node* n : g->nodes())
    if (n->opType() == "Add" || n->opType() == "LayerNormalization") EXPECT_EQ(n->output()->rank(), 2);
  passtest::expectSameResults(*original, *g, 0.0);
}

TEST(PassPropagateReshapes, ViewBelowUnaryOnlyTowardAnotherView) {
  GraphBuilder b;
  Value* x = b.input("x", {6, 4});
  Value* r = b.op("Reshape", {b.op("Relu", {b.op("Reshape", {x, b.int64s({1, 6, 4})})}), b.int64s({24})});
  b.output(r);
  auto run = runPassChecked(b.graph(), "propagate_reshapes", 0.0);
  EXPECT_EQ(run.changes, 1u);
  EXPECT_EQ(b.graph().firstNode()->opType(), "Relu") << "the Relu reads x";

  GraphBuilder lone;
  Value* y = lone.input("y", {6, 4});
  lone.output(lone.op("Sigmoid", {lone.op("Reshape", {y, lone.int64s({1, 24})})}));
  EXPECT_EQ(runPassChecked(lone.graph(), "propagate_reshapes", 0.0).changes, 0u) << "nothing to merge with";
}

TEST(PassPropagateReshapes, ViewAboveRowwiseNeedsTheLastDimKept) {
  for (const Shape& out : {Shape{6, 4}, Shape{3, 8}}) {
    GraphBuilder b;
    Value* x = b.input("x", {1, 6, 4});
    Value* s = b.op("Softmax", {x}, attrs({{"axis", int64_t{2}}}));
    b.output(b.op("Reshape", {s, b.int64s(out)}));
    auto run = runPassChecked(b.graph(), "propagate_reshapes", 0.0);
    EXPECT_EQ(run.changes, out.back() == 4 ? 1u : 0u) << shapeStr(out);
  }
}

TEST(PassPropagateReshapes, BinaryOpsNeedSameShapesAndAnExistingView) {
  // Add(View(a), View(b)), a and b alike: one view after the Add.
  GraphBuilder b;
  Value* a = b.input("a", {4, 6});
  Value* c = b.input("c", {4, 6});
  Value* sum =
      b.op("Sub", {b.op("Reshape", {a, b.int64s({1, 24})}), b.op("Reshape", {c, b.int64s({1, 24})})});
  b.output(sum);
  EXPECT_EQ(runPassChecked(b.graph(), "propagate_reshapes", 0.0).changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "Reshape"), 1u);

  // Broadcasting is left alone.
  GraphBuilder bc;
  Value* p = bc.input("p", {4, 6});
  Value* q = bc.input("q", {1, 6});
  bc.output(
      bc.op("Add", {bc.op("Reshape", {p, bc.int64s({1, 4, 6})}), bc.op("Unsqueeze", {q, bc.int64s({0})})}));
  EXPECT_EQ(runPassChecked(bc.graph(), "propagate_reshapes", 0.0).changes, 0u);
}

TEST(PassPropagateReshapes, ViewThroughTransposeOnlyWhenAViewDisappears) {
  // Reshape [1, 64, 8, 8] -> [1, 64, 64] -> Transpose (0, 2, 1) -> Reshape [64, 64]: one Reshape and a
  // 2-D Transpose.
  GraphBuilder b;
  Value* x = b.input("x", {1, 64, 8, 8});
  Value* t = b.op("Transpose", {b.op("Reshape", {x, b.int64s({1, 64, 64})})},
                  attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}));
  b.output(b.op("Reshape", {t, b.int64s({64, 64})}));
  EXPECT_EQ(runPassChecked(b.graph(), "propagate_reshapes", 0.0).changes, 1u);
  optimize(b.graph());
  EXPECT_EQ(countOps(b.graph(), "Reshape"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Transpose"), 1u);
  for (const Node* n : b.graph().nodes())
    if (n->opType() == "Transpose") EXPECT_EQ(n->output()->rank(), 2);
}

TEST(PassPropagateReshapes, ReduceAbsorbsAUnitView) {
  for (bool keep_shape : {true, false}) {
    GraphBuilder b;
    Value* x = b.input("x", {5, 7});
    Value* v = b.op("Reshape", {x, b.int64s({1, 5, 7})});
    // keepdims 0 over the tokens gives [1, 7], what ReduceMean(x, [0], keepdims 1) gives; keepdims 1
    // gives [1, 1, 7], which x's reduction cannot give without a new view: left alone.
    b.output(b.op("ReduceMean", {v, b.int64s({1})}, attrs({{"keepdims", int64_t{keep_shape ? 0 : 1}}})));
    auto run = runPassChecked(b.graph(), "propagate_reshapes", 0.0);
    EXPECT_EQ(run.changes, keep_shape ? 1u : 0u);
    EXPECT_EQ(countOps(b.graph(), "Reshape"), keep_shape ? 0u : 1u);
  }
}

}  // namespace
}  // namespace npuc
