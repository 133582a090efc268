// The detection ops (opset/ops/detect_*.cpp) and bounded outputs (opset/bounded_output.h):
// results on small hand-checked cases, the bound and the -1 padding of data-dependent sizes, the
// runtimes trimming them, and the errors of bad input (each naming the node, op and shape).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ew_test_util.h"
#include "opset/bounded_output.h"
#include "opset/eval.h"
#include "opset/registry.h"
#include "perf/cpu_op_cost.h"
#include "runtime/executor.h"

namespace npuc {
namespace {

using ewtest::constant;
using ewtest::floats;
using ewtest::int64s;
using ewtest::OneNode;

// A runtime (non-constant) input of the node under test.
ewtest::In rt(Tensor t) {
  return ewtest::In{std::move(t), false};
}

std::vector<int64_t> values(const Tensor& t) {
  return t.toInt64Vector();
}

// Six boxes: 0-2 overlap heavily, 3 and 4 overlap, 5 stands alone; scores of one class.
Tensor sixBoxes() {
  return floats(
      {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
      {1, 6, 4});
}
Tensor sixScores() {
  return floats({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
}

// ---------------------------------------------------------------- NonMaxSuppression

TEST(DetectNms, ConstantInputsGiveTheExactSelection) {
  OneNode n("NonMaxSuppression", {constant(sixBoxes()), constant(sixScores()), constant(int64s({3}, {1})),
                                  constant(floats({0.5f}, {1})), constant(floats({0.0f}, {1}))});
  const Tensor out = n.run0();
  EXPECT_EQ(shapeStr(out.shape()), shapeStr({3, 3}));
  EXPECT_EQ(values(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(DetectNms, ScoreThresholdIsStrictAndCenterFormatWorks) {
  // Center format [xc, yc, w, h]: boxes 0 and 1 coincide, box 2 is apart.
  const Tensor boxes = floats({0.5f, 0.5f, 1, 1, 0.5f, 0.5f, 1, 1, 5, 5, 1, 1}, {1, 3, 4});
  OneNode n("NonMaxSuppression",
            {constant(boxes), constant(floats({0.9f, 0.8f, 0.4f}, {1, 1, 3})), constant(int64s({10}, {1})),
             constant(floats({0.5f}, {1})), constant(floats({0.4f}, {1}))});
  n.attr("center_point_box", int64_t{1});
  EXPECT_EQ(values(n.run0()), (std::vector<int64_t>{0, 0, 0}));  // box 1 suppressed, box 2 at the threshold
}

TEST(DetectNms, IouThresholdOutsideZeroOneIsRefused) {
  OneNode n("NonMaxSuppression",
            {rt(sixBoxes()), rt(sixScores()), constant(int64s({3}, {1})), constant(floats({1.5f}, {1}))});
  try {
    n.infer();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("iou_threshold must be in [0, 1], got 1.5"), std::string::npos)
        << e.what();
  }
}

TEST(DetectNms, ZeroMaxOutputSelectsNothing) {
  OneNode n("NonMaxSuppression", {constant(sixBoxes()), constant(sixScores()), constant(int64s({0}, {1}))});
  EXPECT_EQ(n.run0().numel(), 0);
}

TEST(DetectNms, ComputedBoxesGiveTheBoundAndMinusOnePadding) {
  OneNode n("NonMaxSuppression",
            {rt(sixBoxes()), rt(sixScores()), constant(int64s({4}, {1})), constant(floats({0.5f}, {1}))});
  const Tensor out = n.run0();
  EXPECT_EQ(shapeStr(out.shape()), shapeStr({4, 3}));  // 1 batch * 1 class * min(4, 6)
  EXPECT_EQ(values(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5, -1, -1, -1}));
  EXPECT_EQ(boundedOutputAxis(n.node(), 0), 0);
  EXPECT_EQ(boundedExtent(TensorView(out), 0), 3);
}

TEST(DetectNms, ParameterInputsMustBeConstants) {
  OneNode n("NonMaxSuppression", {rt(sixBoxes()), rt(sixScores()), rt(int64s({3}, {1}))});
  try {
    n.infer();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("node_under_test"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_output_boxes_per_class (input 2) must be a constant"),
              std::string::npos)
        << e.what();
  }
}

TEST(DetectNms, BadShapesNameNodeAndShape) {
  OneNode n("NonMaxSuppression",
            {rt(floats({0, 0, 1}, {1, 1, 3})), rt(floats({1}, {1, 1, 1})), constant(int64s({1}, {1}))});
  try {
    n.infer();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node 'node_under_test' (NonMaxSuppression)"), std::string::npos) << m;
    EXPECT_NE(m.find("[1,1,3]"), std::string::npos) << m;
  }
  OneNode s("NonMaxSuppression", {rt(sixBoxes()), rt(floats({1, 2}, {1, 1, 2})), constant(int64s({1}, {1}))});
  EXPECT_THROW(s.infer(), ShapeError);
}

// A graph boxes -> NonMaxSuppression -> graph output: the executor trims the bounded output.
TEST(DetectBounded, ExecutorTrimsToTheActualExtent) {
  Graph g;
  Value* boxes = g.addInput("boxes", DType::Float32, {1, 6, 4});
  Value* scores = g.addInput("scores", DType::Float32, {1, 1, 6});
  Node* nms = g.appendNode(
      "NonMaxSuppression",
      {boxes, scores, g.addConstant(int64s({5}, {1})), g.addConstant(floats({0.5f}, {1}))}, 1, "nms");
  inferNode(*nms);
  g.addOutput(nms->output(0));
  Executor ex(g);
  EXPECT_EQ(shapeStr(ex.outputs()[0].shape), shapeStr({5, 3}));
  const std::vector<Tensor> out = ex.run({sixBoxes(), sixScores()});
  EXPECT_EQ(shapeStr(out[0].shape()), shapeStr({3, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(DetectBounded, ExecutorRefusesAConsumerNamingNodeAndConsumer) {
  Graph g;
  Value* boxes = g.addInput("boxes", DType::Float32, {1, 6, 4});
  Value* scores = g.addInput("scores", DType::Float32, {1, 1, 6});
  Node* nms = g.appendNode("NonMaxSuppression", {boxes, scores, g.addConstant(int64s({5}, {1}))}, 1, "nms");
  inferNode(*nms);
  Node* cast = g.appendNode("Cast", {nms->output(0)}, 1, "to_float");
  cast->attrs().set("to", int64_t{1});
  inferNode(*cast);
  g.addOutput(cast->output(0));
  try {
    Executor ex(g);
    FAIL() << "expected UnsupportedOpError";
  } catch (const UnsupportedOpError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node 'nms' (NonMaxSuppression)"), std::string::npos) << m;
    EXPECT_NE(m.find("node 'to_float' (Cast) reads it"), std::string::npos) << m;
    EXPECT_NE(m.find("[5,3]"), std::string::npos) << m;
  }
}

// ---------------------------------------------------------------- RoiAlign

TEST(DetectRoiAlign, AverageOfAConstantMapIsTheConstant) {
  Tensor x(DType::Float32, {1, 2, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i < 16 ? 2.0f : -1.0f;
  OneNode n("RoiAlign", {rt(x), rt(floats({0.5f, 0.5f, 3, 3}, {1, 4})), rt(int64s({0}, {1}))});
  n.attr("output_height", int64_t{2}).attr("output_width", int64_t{2});
  const Tensor y = n.run0();
  EXPECT_EQ(shapeStr(y.shape()), shapeStr({1, 2, 2, 2}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], 2.0f);
  for (int64_t i = 4; i < 8; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], -1.0f);
}

TEST(DetectRoiAlign, BadInputsAreNamed) {
  OneNode n("RoiAlign", {rt(floats({0}, {1, 1, 1, 1})), rt(floats({0, 0, 1}, {1, 3})), rt(int64s({0}, {1}))});
  EXPECT_THROW(n.infer(), ShapeError);
  OneNode m("RoiAlign",
            {rt(floats({0}, {1, 1, 1, 1})), rt(floats({0, 0, 1, 1}, {1, 4})), rt(int64s({0}, {1}))});
  m.attr("mode", std::string("median"));
  EXPECT_THROW(m.infer(), ShapeError);
  OneNode b("RoiAlign",
            {rt(floats({0}, {1, 1, 1, 1})), rt(floats({0, 0, 1, 1}, {1, 4})), rt(int64s({3}, {1}))});
  try {
    b.run();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_indices[0] = 3"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- GridSample

TEST(DetectGridSample, CornersWithAlignCornersPickThePixels) {
  const Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
  OneNode n("GridSample", {rt(x), rt(floats({-1, -1, 1, -1, -1, 1, 1, 1}, {1, 2, 2, 2}))});
  n.attr("align_corners", int64_t{1});
  EXPECT_EQ(values(n.run0().castTo(DType::Int64)), (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(DetectGridSample, OnlyFourDimensionsAndKnownModes) {
  OneNode n("GridSample", {rt(floats({0}, {1, 1, 1, 1, 1})), rt(floats({0, 0, 0}, {1, 1, 1, 1, 3}))});
  try {
    n.infer();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("4-D"), std::string::npos) << e.what();
  }
  OneNode m("GridSample", {rt(floats({0}, {1, 1, 1, 1})), rt(floats({0, 0}, {1, 1, 1, 2}))});
  m.attr("padding_mode", std::string("wrap"));
  EXPECT_THROW(m.infer(), ShapeError);
}

// ---------------------------------------------------------------- NonZero, Compress, Unique

TEST(DetectNonZero, NegativeZeroIsZeroAndNanIsNot) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OneNode n("NonZero", {constant(floats({0, -0.0f, nan, 1, 0, 2}, {2, 3}))});
  const Tensor out = n.run0();
  EXPECT_EQ(shapeStr(out.shape()), shapeStr({2, 3}));
  EXPECT_EQ(values(out), (std::vector<int64_t>{0, 1, 1, 2, 0, 2}));
}

TEST(DetectNonZero, ComputedInputIsBoundedAndTrimmed) {
  Graph g;
  Value* x = g.addInput("x", DType::Int32, {2, 3});
  Node* nz = g.appendNode("NonZero", {x}, 1, "nz");
  inferNode(*nz);
  g.addOutput(nz->output(0));
  EXPECT_EQ(shapeStr(nz->output(0)->shape()), shapeStr({2, 6}));
  Executor ex(g);
  const std::vector<Tensor> out = ex.run({Tensor::fromVector<int32_t>({0, 5, 0, 0, 0, 7}, {2, 3})});
  EXPECT_EQ(shapeStr(out[0].shape()), shapeStr({2, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<int64_t>{0, 1, 1, 2}));
}

TEST(DetectCompress, ConditionMustBeConstantAndNotTooLong) {
  OneNode n("Compress", {rt(floats({1, 2, 3}, {3})), rt(Tensor::fromVector<bool>({true, false, true}, {3}))});
  try {
    n.infer();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Compress condition (input 1) must be a constant"),
              std::string::npos);
  }
  OneNode l("Compress",
            {rt(floats({1, 2}, {2})), constant(Tensor::fromVector<bool>({true, false, true}, {3}))});
  EXPECT_THROW(l.infer(), ShapeError);
  OneNode ok("Compress", {rt(floats({1, 2, 3, 4, 5, 6}, {2, 3})),
                          constant(Tensor::fromVector<bool>({false, true}, {2}))});
  ok.attr("axis", int64_t{-1});
  const Tensor y = ok.run0();
  EXPECT_EQ(shapeStr(y.shape()), shapeStr({2, 1}));
  EXPECT_EQ(values(y.castTo(DType::Int64)), (std::vector<int64_t>{2, 5}));
}

TEST(DetectUnique, SortedAndFirstOccurrenceOrders) {
  const Tensor x = Tensor::fromVector<int64_t>({3, 1, 3, 2, 1}, {5});
  OneNode s("Unique", {constant(x)}, 4);
  const std::vector<Tensor> r = s.run();
  EXPECT_EQ(values(r[0]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(values(r[1]), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(values(r[2]), (std::vector<int64_t>{2, 0, 2, 1, 0}));
  EXPECT_EQ(values(r[3]), (std::vector<int64_t>{2, 1, 2}));
  OneNode u("Unique", {constant(x)}, 4);
  u.attr("sorted", int64_t{0});
  const std::vector<Tensor> q = u.run();
  EXPECT_EQ(values(q[0]), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(values(q[2]), (std::vector<int64_t>{0, 1, 0, 2, 1}));
}

TEST(DetectUnique, ComputedInputIsRefused) {
  OneNode n("Unique", {rt(floats({1, 1}, {2}))});
  EXPECT_THROW(n.infer(), ShapeError);
}

// ---------------------------------------------------------------- registration facts

TEST(DetectOps, CpuOnlyWithReasonAndFloatQuantClass) {
  for (const char* op : {"NonMaxSuppression", "RoiAlign", "GridSample", "NonZero", "Compress", "Unique"}) {
    const OpSchema* s = OpRegistry::instance().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_FALSE(s->traits.cpu_reason.empty()) << op;
    EXPECT_EQ(s->traits.quant_class, QuantClass::Float) << op;
  }
}

TEST(DetectOps, NmsCpuCostIsTheAssumedCount) {
  Graph g;
  Node* nms = g.appendNode("NonMaxSuppression",
                           {g.addInput("b", DType::Float32, {1, 1024, 4}),
                            g.addInput("s", DType::Float32, {1, 3, 1024}), g.addConstant(int64s({20}, {1}))},
                           1, "nms");
  const double n = 1024;
  EXPECT_DOUBLE_EQ(perf::cpuOpFlops(*nms), 3 * (n + 2 * n * 10 + 15 * n * 20));
  Node* relu = g.appendNode("Relu", {g.inputs()[0]}, 1, "r");
  EXPECT_LT(perf::cpuOpFlops(*relu), 0);
}

}  // namespace
}  // namespace npuc
