// Control flow (If, Loop, Scan): import of sub-graphs with outer-scope reads, inlining of what is
// known at compile time (differential: the same model with the condition / trip count fed at run
// time goes through the host kernels and must give the same bits), host kernels, and the errors
// for what npuc cannot compile (they name the node, the op and the shapes).
#include <gtest/gtest.h>

#include <map>

#include "frontend/onnx_import.h"
#include "onnx_test_util.h"
#include "opset/eval.h"
#include "passes/inline_control_flow.h"
#include "runtime/executor.h"

namespace npuc {
namespace {

using testing::expectError;
using testing::ModelBuilder;
using testing::setAttr;

size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* node : g.nodes()) n += node->opType() == op;
  return n;
}

// A sub-graph under construction (no declared output types: the outer graph fixes them).
struct Sub {
  onnx::GraphProto g;
  explicit Sub(const std::string& name) { g.set_name(name); }
  Sub& input(const std::string& name, int32_t elem, const std::vector<int64_t>& dims) {
    ModelBuilder::valueInfo(g.add_input(), name, dims, elem);
    return *this;
  }
  Sub& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
            std::map<std::string, int64_t> ints = {}) {
    auto* n = g.add_node();
    n->set_op_type(op);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    for (const auto& [k, v] : ints) setAttr(*n, k, v);
    return *this;
  }
  Sub& output(const std::string& name) {
    g.add_output()->set_name(name);
    return *this;
  }
};

void setGraph(onnx::NodeProto& n, const std::string& name, const Sub& s) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = s.g;
}

void addScalar(ModelBuilder& m, const std::string& name, int32_t elem, int64_t v) {
  onnx::TensorProto* t = m.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  if (elem == onnx::TensorProto::BOOL || elem == onnx::TensorProto::INT32)
    t->add_int32_data(static_cast<int32_t>(v));
  else
    t->add_int64_data(v);
}

Tensor randomTensor(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::uninitialized(DType::Float32, s);
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(static_cast<int32_t>(x >> 8) % 2000) / 500.0f - 2.0f;
  }
  return t;
}

void expectSameBits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
}

// Runs `g` both with the reference evaluator and the planned executor; they must agree.
std::vector<Tensor> runBoth(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::vector<Tensor> ref = evalGraph(g, feeds);
  Executor ex(g);
  std::vector<Tensor> ins;
  for (const auto& info : ex.inputs()) ins.push_back(feeds.at(info.name));
  std::vector<Tensor> out = ex.run(ins);
  EXPECT_EQ(ref.size(), out.size());
  for (size_t i = 0; i < ref.size() && i < out.size(); ++i) expectSameBits(ref[i], out[i]);
  return ref;
}

// ---------------------------------------------------------------- If

// y = If(cond) { Relu(x) * w } else { Neg(x) + x }: both branches read x and w from outside.
ModelBuilder ifModel(bool cond_is_input, bool cond_value = true) {
  ModelBuilder m(17);
  m.input("x", {2, 3});
  if (cond_is_input)
    m.input("c", {}, onnx::TensorProto::BOOL);
  else
    addScalar(m, "c", onnx::TensorProto::BOOL, cond_value);
  m.initializer("w", {3}, {0.5f, -1.0f, 2.0f});
  m.output("y");
  auto& n = m.node("If", {"c"}, {"y"}, "if1");
  setGraph(n, "then_branch",
           Sub("then").node("Relu", {"x"}, {"r"}).node("Mul", {"r", "w"}, {"t"}).output("t"));
  setGraph(n, "else_branch",
           Sub("else").node("Neg", {"x"}, {"e0"}).node("Add", {"e0", "x"}, {"e"}).output("e"));
  return m;
}

TEST(ControlIf, ImportMakesOuterReadsInputs) {
  ImportOptions raw;
  raw.infer_shapes = false;
  auto g = importOnnxBytes(ifModel(true).bytes(), raw);
  Node* n = g->findNode("if1");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->numInputs(), 3u);  // c, then the outer x and w
  EXPECT_EQ(n->input(1)->name(), "x");
  EXPECT_EQ(n->input(2)->name(), "w");
  EXPECT_EQ(n->attrs().strings("implicit_inputs"), (std::vector<std::string>{"x", "w"}));
  // The serialized branches show as their size, so dumps stay printable text.
  const std::string dump = g->dump();
  EXPECT_NE(dump.find("then_branch=<"), std::string::npos) << dump;
  EXPECT_NE(dump.find(" bytes>"), std::string::npos) << dump;
}

TEST(ControlIf, ConstantConditionIsInlined) {
  for (bool c : {true, false}) {
    auto g = importOnnxBytes(ifModel(false, c).bytes());
    EXPECT_EQ(countOps(*g, "If"), 0u);
    EXPECT_EQ(countOps(*g, c ? "Relu" : "Neg"), 1u);
    EXPECT_EQ(g->outputs()[0]->name(), "y");  // the output keeps its name
    g->verify();
  }
}

TEST(ControlIf, InlinedMatchesHostKernelBitwise) {
  const Tensor x = randomTensor({2, 3}, 1);
  auto dynamic = importOnnxBytes(ifModel(true).bytes());
  ASSERT_EQ(countOps(*dynamic, "If"), 1u);
  for (bool c : {true, false}) {
    auto inlined = importOnnxBytes(ifModel(false, c).bytes());
    const Tensor want = runBoth(*inlined, {{"x", x}})[0];
    const Tensor got = runBoth(*dynamic, {{"x", x}, {"c", Tensor::scalar(c)}})[0];
    expectSameBits(want, got);
    const float x0 = x.data<float>()[1];
    EXPECT_FLOAT_EQ(got.data<float>()[1], c ? std::max(x0, 0.0f) * -1.0f : 0.0f);
  }
}

TEST(ControlIf, BranchShapesMustAgreeWhenDataDependent) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).input("c", {}, onnx::TensorProto::BOOL).output("y");
  m.initializerI64("shape", {3, 2});
  auto& n = m.node("If", {"c"}, {"y"}, "if_shapes");
  setGraph(n, "then_branch", Sub("then").node("Relu", {"x"}, {"t"}).output("t"));
  setGraph(n, "else_branch", Sub("else").node("Reshape", {"x", "shape"}, {"e"}).output("e"));
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); },
                          {"if_shapes", "(If)", "else_branch", "[3,2]", "[2,3]", "static"});
}

TEST(ControlIf, UntakenBranchNeedNotFit) {
  // The else branch reshapes [2,3] to [4,4]: invalid, but a constant true never looks at it.
  ModelBuilder m(17);
  m.input("x", {2, 3}).output("y");
  addScalar(m, "c", onnx::TensorProto::BOOL, 1);
  m.initializerI64("bad", {4, 4});
  auto& n = m.node("If", {"c"}, {"y"}, "if_dead");
  setGraph(n, "then_branch", Sub("then").node("Relu", {"x"}, {"t"}).output("t"));
  setGraph(n, "else_branch", Sub("else").node("Reshape", {"x", "bad"}, {"e"}).output("e"));
  auto g = importOnnxBytes(m.bytes());
  EXPECT_EQ(countOps(*g, "If"), 0u);
  EXPECT_EQ(countOps(*g, "Reshape"), 0u);
}

TEST(ControlIf, UndefinedOuterNameIsAGraphError) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).input("c", {}, onnx::TensorProto::BOOL).output("y");
  auto& n = m.node("If", {"c"}, {"y"}, "if_ghost");
  setGraph(n, "then_branch", Sub("then").node("Relu", {"ghost"}, {"t"}).output("t"));
  setGraph(n, "else_branch", Sub("else").node("Relu", {"x"}, {"e"}).output("e"));
  expectError<GraphError>([&] { importOnnxBytes(m.bytes()); }, {"if_ghost", "ghost", "never defined"});
}

TEST(ControlIf, NestingDeeperThanTheCapIsRefused) {
  // If(c) { If(c) { ... Relu(x) } } else { Neg(x) }, 10 levels deep, on a run-time condition.
  Sub inner("l0");
  inner.node("Relu", {"x"}, {"r0"}).output("r0");
  for (int level = 1; level <= 10; ++level) {
    Sub outer("l" + std::to_string(level));
    auto* n = outer.g.add_node();
    n->set_op_type("If");
    n->add_input("c");
    n->add_output("r" + std::to_string(level));
    setGraph(*n, "then_branch", inner);
    setGraph(*n, "else_branch",
             Sub("e").node("Neg", {"x"}, {"e" + std::to_string(level)}).output("e" + std::to_string(level)));
    outer.output("r" + std::to_string(level));
    inner = outer;
  }
  ModelBuilder m(17);
  m.input("x", {2, 3}).input("c", {}, onnx::TensorProto::BOOL).output("y");
  auto& n = m.node("If", {"c"}, {"y"}, "if_deep");
  setGraph(n, "then_branch", inner);
  setGraph(n, "else_branch", Sub("e").node("Neg", {"x"}, {"e"}).output("e"));
  expectError<ResourceError>([&] { importOnnxBytes(m.bytes()); }, {"if_deep", "nested deeper than 8"});
}

TEST(ControlIf, ConditionWithManyValuesIsRefused) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).input("c", {2}, onnx::TensorProto::BOOL).output("y");
  auto& n = m.node("If", {"c"}, {"y"}, "if_vec");
  setGraph(n, "then_branch", Sub("then").node("Relu", {"x"}, {"t"}).output("t"));
  setGraph(n, "else_branch", Sub("else").node("Neg", {"x"}, {"e"}).output("e"));
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); }, {"if_vec", "(If)", "cond", "[2]"});
}

TEST(ControlIf, BranchOutputMayBeAnOuterValue) {
  // then returns x itself, else a new value; inlining keeps the graph output's name.
  ModelBuilder m(17);
  m.input("x", {2, 3}).output("y");
  addScalar(m, "c", onnx::TensorProto::BOOL, 1);
  auto& n = m.node("If", {"c"}, {"y"}, "if_pass");
  setGraph(n, "then_branch", Sub("then").output("x"));
  setGraph(n, "else_branch", Sub("else").node("Neg", {"x"}, {"e"}).output("e"));
  auto g = importOnnxBytes(m.bytes());
  EXPECT_EQ(countOps(*g, "If"), 0u);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  const Tensor x = randomTensor({2, 3}, 2);
  expectSameBits(runBoth(*g, {{"x", x}})[0], x);
}

// ---------------------------------------------------------------- Loop

// Loop(M, cond=true, v) with body: v' = v * a + iter; scan output: v' (so y_scan is [M,2,3]).
// `a` is read from the outer graph. `early_stop` makes the body's condition iter < 2.
ModelBuilder loopModel(bool m_is_input, int64_t m_value, bool scan_output, bool early_stop = false) {
  ModelBuilder m(17);
  m.input("x", {2, 3});
  if (m_is_input)
    m.input("M", {}, onnx::TensorProto::INT64);
  else
    addScalar(m, "M", onnx::TensorProto::INT64, m_value);
  addScalar(m, "cond", onnx::TensorProto::BOOL, 1);
  addScalar(m, "two", onnx::TensorProto::INT64, 2);
  m.initializer("a", {3}, {0.5f, 1.0f, -0.25f});
  m.output("v_final");
  if (scan_output) m.output("v_scan");
  std::vector<std::string> outs{"v_final"};
  if (scan_output) outs.push_back("v_scan");
  auto& n = m.node("Loop", {"M", "cond", "x"}, outs, "loop1");
  Sub body("body");
  body.input("i", onnx::TensorProto::INT64, {}).input("c_in", onnx::TensorProto::BOOL, {});
  body.input("v", onnx::TensorProto::FLOAT, {2, 3});
  body.node("Cast", {"i"}, {"fi"}, {{"to", onnx::TensorProto::FLOAT}})
      .node("Mul", {"v", "a"}, {"va"})
      .node("Add", {"va", "fi"}, {"v_next"});
  if (early_stop)
    body.node("Less", {"i", "two"}, {"c_out"});
  else
    body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out").output("v_next");
  if (scan_output) body.node("Identity", {"v_next"}, {"slice"}).output("slice");
  setGraph(n, "body", body);
  return m;
}

// What loopModel computes, by hand.
std::pair<Tensor, Tensor> loopExpected(const Tensor& x, int64_t trips) {
  const float a[3] = {0.5f, 1.0f, -0.25f};
  Tensor v = Tensor::uninitialized(DType::Float32, {2, 3});
  std::memcpy(v.raw(), x.raw(), x.nbytes());
  Tensor scan = Tensor::uninitialized(DType::Float32, {trips, 2, 3});
  for (int64_t t = 0; t < trips; ++t) {
    for (int64_t k = 0; k < 6; ++k) {
      v.data<float>()[k] = v.data<float>()[k] * a[k % 3] + static_cast<float>(t);
      scan.data<float>()[t * 6 + k] = v.data<float>()[k];
    }
  }
  return {v, scan};
}

TEST(ControlLoop, ConstantTripCountIsUnrolled) {
  auto g = importOnnxBytes(loopModel(false, 4, true).bytes());
  EXPECT_EQ(countOps(*g, "Loop"), 0u);
  EXPECT_EQ(g->outputs()[1]->shape(), (Shape{4, 2, 3}));
  const Tensor x = randomTensor({2, 3}, 3);
  auto out = runBoth(*g, {{"x", x}});
  auto [v, scan] = loopExpected(x, 4);
  expectSameBits(out[0], v);
  expectSameBits(out[1], scan);
}

TEST(ControlLoop, UnrolledMatchesHostKernelBitwise) {
  const Tensor x = randomTensor({2, 3}, 4);
  auto dynamic = importOnnxBytes(loopModel(true, 0, false).bytes());
  ASSERT_EQ(countOps(*dynamic, "Loop"), 1u);
  for (int64_t trips : {1, 3, 6}) {
    auto unrolled = importOnnxBytes(loopModel(false, trips, false).bytes());
    EXPECT_EQ(countOps(*unrolled, "Loop"), 0u);
    expectSameBits(runBoth(*unrolled, {{"x", x}})[0],
                   runBoth(*dynamic, {{"x", x}, {"M", Tensor::scalar<int64_t>(trips)}})[0]);
  }
  // Zero trips: the carried value comes out unchanged.
  expectSameBits(runBoth(*dynamic, {{"x", x}, {"M", Tensor::scalar<int64_t>(0)}})[0], x);
}

TEST(ControlLoop, ConditionFoldingToFalseEndsTheUnrolling) {
  // The body's condition is iter < 2: it folds per unrolled iteration, so three copies (0, 1, 2)
  // are made whatever M says past that.
  auto g = importOnnxBytes(loopModel(false, 10, false, /*early_stop=*/true).bytes());
  EXPECT_EQ(countOps(*g, "Loop"), 0u);
  EXPECT_EQ(countOps(*g, "Mul"), 3u);
  const Tensor x = randomTensor({2, 3}, 9);
  expectSameBits(runBoth(*g, {{"x", x}})[0], loopExpected(x, 3).first);
}

TEST(ControlLoop, EarlyStopLoopWithDataTripCountRunsOnHost) {
  auto g = importOnnxBytes(loopModel(true, 0, false, /*early_stop=*/true).bytes());
  ASSERT_EQ(countOps(*g, "Loop"), 1u);
  const Tensor x = randomTensor({2, 3}, 5);
  expectSameBits(runBoth(*g, {{"x", x}, {"M", Tensor::scalar<int64_t>(10)}})[0], loopExpected(x, 3).first);
  expectSameBits(runBoth(*g, {{"x", x}, {"M", Tensor::scalar<int64_t>(2)}})[0], loopExpected(x, 2).first);
}

TEST(ControlLoop, LongLoopStaysALoopAndRunsOnHost) {
  const int64_t trips = kMaxUnrollTrips + 6;
  auto g = importOnnxBytes(loopModel(false, trips, true).bytes());
  ASSERT_EQ(countOps(*g, "Loop"), 1u);
  EXPECT_EQ(g->outputs()[1]->shape(), (Shape{trips, 2, 3}));
  const Tensor x = randomTensor({2, 3}, 6);
  auto out = runBoth(*g, {{"x", x}});
  auto [v, scan] = loopExpected(x, trips);
  expectSameBits(out[0], v);
  expectSameBits(out[1], scan);
}

TEST(ControlLoop, ScanOutputsNeedAConstantTripCount) {
  expectError<ShapeError>([&] { importOnnxBytes(loopModel(true, 0, true).bytes()); },
                          {"loop1", "(Loop)", "trip count M", "must be a constant"});
}

TEST(ControlLoop, CarriedValueMayNotChangeShape) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).input("M", {}, onnx::TensorProto::INT64).output("v_final");
  m.initializerI64("shape", {3, 2});
  auto& n = m.node("Loop", {"M", "", "x"}, {"v_final"}, "loop_grow");
  Sub body("body");
  body.input("i", onnx::TensorProto::INT64, {}).input("c_in", onnx::TensorProto::BOOL, {});
  body.input("v", onnx::TensorProto::FLOAT, {2, 3});
  body.node("Reshape", {"v", "shape"}, {"v2"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out")
      .output("v2");
  setGraph(n, "body", body);
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); },
                          {"loop_grow", "(Loop)", "loop-carried value 0", "[3,2]", "[2,3]"});
}

TEST(ControlLoop, NoTripCountAndNoConditionNeverEnds) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).output("v_final");
  auto& n = m.node("Loop", {"", "", "x"}, {"v_final"}, "loop_forever");
  Sub body("body");
  body.input("i", onnx::TensorProto::INT64, {}).input("c_in", onnx::TensorProto::BOOL, {});
  body.input("v", onnx::TensorProto::FLOAT, {2, 3});
  body.node("Identity", {"c_in"}, {"c_out"}).node("Identity", {"v"}, {"v2"}).output("c_out").output("v2");
  setGraph(n, "body", body);
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); }, {"loop_forever", "never ends"});
}

TEST(ControlLoop, NestedIfOnTheIterationFoldsPerIteration) {
  // body: v' = If(i == 1) { v * 2 } else { v + 1 }: each unrolled copy keeps one branch.
  ModelBuilder m(17);
  m.input("x", {2, 3}).output("v_final");
  addScalar(m, "M", onnx::TensorProto::INT64, 3);
  addScalar(m, "one", onnx::TensorProto::INT64, 1);
  m.initializer("k2", {}, {2.0f});
  m.initializer("k1", {}, {1.0f});
  auto& n = m.node("Loop", {"M", "", "x"}, {"v_final"}, "loop_if");
  Sub body("body");
  body.input("i", onnx::TensorProto::INT64, {}).input("c_in", onnx::TensorProto::BOOL, {});
  body.input("v", onnx::TensorProto::FLOAT, {2, 3});
  body.node("Equal", {"i", "one"}, {"is1"});
  body.node("Identity", {"c_in"}, {"c_out"});
  auto* inner = body.g.add_node();
  inner->set_op_type("If");
  inner->add_input("is1");
  inner->add_output("v2");
  setGraph(*inner, "then_branch", Sub("t").node("Mul", {"v", "k2"}, {"tv"}).output("tv"));
  setGraph(*inner, "else_branch", Sub("e").node("Add", {"v", "k1"}, {"ev"}).output("ev"));
  body.output("c_out").output("v2");
  setGraph(n, "body", body);
  auto g = importOnnxBytes(m.bytes());
  EXPECT_EQ(countOps(*g, "Loop") + countOps(*g, "If"), 0u);
  EXPECT_EQ(countOps(*g, "Mul"), 1u);
  EXPECT_EQ(countOps(*g, "Add"), 2u);
  const Tensor x = randomTensor({2, 3}, 7);
  const Tensor y = runBoth(*g, {{"x", x}})[0];
  for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(y.data<float>()[k], ((x.data<float>()[k] + 1.0f) * 2.0f) + 1.0f);
}

// Three nested Loops of 64 trips around 20 Adds would unroll to 64^3 * 20 = 5.2 million nodes from
// a file of a few hundred bytes: the whole-graph cap stops the unrolling and the rest stay Loops.
TEST(ControlLoop, NestedLoopsCannotMultiplyPastTheGraphCap) {
  ModelBuilder m(17);
  m.input("x", {2, 3}).output("v_final");
  addScalar(m, "M", onnx::TensorProto::INT64, kMaxUnrollTrips);
  m.initializer("a", {3}, {0.5f, 1.0f, -0.25f});
  auto level = [](const std::string& name) {
    Sub body(name);
    body.input("i", onnx::TensorProto::INT64, {}).input("c_in", onnx::TensorProto::BOOL, {});
    body.input("v", onnx::TensorProto::FLOAT, {2, 3});
    body.node("Identity", {"c_in"}, {"c_out"});
    return body;
  };
  Sub inner = level("inner");
  std::string v = "v";
  for (int k = 0; k < 20; ++k) {
    inner.node("Add", {v, "a"}, {"s" + std::to_string(k)});
    v = "s" + std::to_string(k);
  }
  inner.output("c_out").output(v);
  Sub middle = level("middle");
  auto* mid_loop = middle.g.add_node();
  mid_loop->set_op_type("Loop");
  for (const char* i : {"M", "", "v"}) mid_loop->add_input(i);
  mid_loop->add_output("mv");
  setGraph(*mid_loop, "body", inner);
  middle.output("c_out").output("mv");
  Sub outer = level("outer");
  auto* out_loop = outer.g.add_node();
  out_loop->set_op_type("Loop");
  for (const char* i : {"M", "", "v"}) out_loop->add_input(i);
  out_loop->add_output("ov");
  setGraph(*out_loop, "body", middle);
  outer.output("c_out").output("ov");
  setGraph(m.node("Loop", {"M", "", "x"}, {"v_final"}, "outer_loop"), "body", outer);

  auto g = importOnnxBytes(m.bytes());
  EXPECT_LE(static_cast<int64_t>(g->numNodes()), kMaxGraphNodesAfterUnroll + kMaxUnrolledNodes);
  EXPECT_GT(countOps(*g, "Loop"), 0u);  // what did not fit stays a Loop (on the CPU)
}

// ---------------------------------------------------------------- Scan

// Scan over x [T, 3] (axis 0) or [3, T] (axis 1): state s' = s + x_t, scan output s'
// (a cumulative sum), optionally reversed.
ModelBuilder scanModel(int64_t T, int64_t axis, int64_t reverse) {
  ModelBuilder m(17);
  m.input("x", axis == 0 ? std::vector<int64_t>{T, 3} : std::vector<int64_t>{3, T});
  m.initializer("s0", {3}, {0.0f, 1.0f, -1.0f});
  m.output("s").output("cum");
  auto& n = m.node("Scan", {"s0", "x"}, {"s", "cum"}, "scan1");
  setAttr(n, "num_scan_inputs", int64_t{1});
  setAttr(n, "scan_input_axes", std::vector<int64_t>{axis});
  setAttr(n, "scan_output_axes", std::vector<int64_t>{axis});
  setAttr(n, "scan_input_directions", std::vector<int64_t>{reverse});
  setAttr(n, "scan_output_directions", std::vector<int64_t>{reverse});
  Sub body("body");
  body.input("st", onnx::TensorProto::FLOAT, {3}).input("xt", onnx::TensorProto::FLOAT, {3});
  body.node("Add", {"st", "xt"}, {"st2"}).node("Identity", {"st2"}, {"o"}).output("st2").output("o");
  setGraph(n, "body", body);
  return m;
}

TEST(ControlScan, ShortScanIsUnrolledLongScanRunsOnHost) {
  for (int64_t axis : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      for (int64_t T : {int64_t{5}, kMaxUnrollTrips + 3}) {
        SCOPED_TRACE("axis " + std::to_string(axis) + " reverse " + std::to_string(reverse) + " T " +
                     std::to_string(T));
        auto g = importOnnxBytes(scanModel(T, axis, reverse).bytes());
        EXPECT_EQ(countOps(*g, "Scan"), T <= kMaxUnrollTrips ? 0u : 1u);
        const Shape xs = axis == 0 ? Shape{T, 3} : Shape{3, T};
        const Tensor x = randomTensor(xs, 8);
        auto out = runBoth(*g, {{"x", x}});
        // Cumulative sum in scan order, by hand (float adds in the same order as the body).
        float s[3] = {0.0f, 1.0f, -1.0f};
        for (int64_t step = 0; step < T; ++step) {
          const int64_t t = reverse ? T - 1 - step : step;
          for (int64_t c = 0; c < 3; ++c) {
            const int64_t at = axis == 0 ? t * 3 + c : c * T + t;
            s[c] += x.data<float>()[at];
            ASSERT_EQ(out[1].data<float>()[at], s[c]) << "step " << step << " channel " << c;
          }
        }
        for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(out[0].data<float>()[c], s[c]);
      }
    }
  }
}

TEST(ControlScan, ScanLengthsMustAgree) {
  ModelBuilder m(17);
  m.input("x", {4, 3}).input("z", {5, 3});
  m.initializer("s0", {3}, {0.0f, 0.0f, 0.0f});
  m.output("s");
  auto& n = m.node("Scan", {"s0", "x", "z"}, {"s"}, "scan_mismatch");
  setAttr(n, "num_scan_inputs", int64_t{2});
  Sub body("body");
  body.input("st", onnx::TensorProto::FLOAT, {3}).input("xt", onnx::TensorProto::FLOAT, {3});
  body.input("zt", onnx::TensorProto::FLOAT, {3});
  body.node("Add", {"st", "xt"}, {"st2"}).output("st2");
  setGraph(n, "body", body);
  expectError<ShapeError>([&] { importOnnxBytes(m.bytes()); },
                          {"scan_mismatch", "(Scan)", "sequence lengths", "4", "5"});
}

// Scan-8: batch axis first, scan axis 1; each batch entry runs its own sequence.
ModelBuilder scan8Model(bool with_lens, int64_t len_value) {
  ModelBuilder m(8);
  m.input("x", {2, 4, 3}).input("s0", {2, 3}).output("s").output("cum");
  if (with_lens) {
    onnx::TensorProto* t = m.graph().add_initializer();
    t->set_name("lens");
    t->set_data_type(onnx::TensorProto::INT32);
    t->add_dims(2);
    t->add_int32_data(4);
    t->add_int32_data(static_cast<int32_t>(len_value));
  }
  auto& n = m.node("Scan", {with_lens ? "lens" : "", "s0", "x"}, {"s", "cum"}, "scan8");
  setAttr(n, "num_scan_inputs", int64_t{1});
  Sub body("body");
  body.input("st", onnx::TensorProto::FLOAT, {3}).input("xt", onnx::TensorProto::FLOAT, {3});
  body.node("Add", {"st", "xt"}, {"st2"}).node("Identity", {"st2"}, {"o"}).output("st2").output("o");
  setGraph(n, "body", body);
  return m;
}

TEST(ControlScan, Scan8BatchFormRunsPerBatchOnHost) {
  auto g = importOnnxBytes(scan8Model(true, 4).bytes());
  ASSERT_EQ(countOps(*g, "Scan"), 1u);
  EXPECT_EQ(g->outputs()[1]->shape(), (Shape{2, 4, 3}));
  const Tensor x = randomTensor({2, 4, 3}, 10), s0 = randomTensor({2, 3}, 11);
  auto out = runBoth(*g, {{"x", x}, {"s0", s0}});
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t c = 0; c < 3; ++c) {
      float s = s0.data<float>()[b * 3 + c];
      for (int64_t t = 0; t < 4; ++t) {
        s += x.data<float>()[(b * 4 + t) * 3 + c];
        EXPECT_EQ(out[1].data<float>()[(b * 4 + t) * 3 + c], s);
      }
      EXPECT_EQ(out[0].data<float>()[b * 3 + c], s);
    }
  }
}

TEST(ControlScan, Scan8ShortSequencesAreRefused) {
  expectError<ShapeError>([&] { importOnnxBytes(scan8Model(true, 3).bytes()); },
                          {"scan8", "(Scan)", "sequence_lens[1] = 3", "full-length"});
}

}  // namespace
}  // namespace npuc
