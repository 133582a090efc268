// Channels-last regions of the FP32 host runtime (runtime/host_layout.h): which values are stored
// NHWC, that region edges (Flatten, Transpose, a non-conv reader, a graph output) stay NCHW, and
// that results equal the NCHW-everywhere run and the reference evaluator, with channel counts
// that are no multiple of oneDNN's 16-channel blocks.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "opset/eval.h"
#include "runtime/executor.h"
#include "runtime/host_fusion.h"
#include "runtime/host_layout.h"
#include "tensor_test_util.h"

namespace npuc {
namespace {

using testutil::maxAbsDiff;
using testutil::randomTensor;

Value* addOp(Graph& g, const std::string& op, const std::vector<Value*>& ins, const Attributes& attrs = {}) {
  Node* n = g.appendNode(op, ins, 1);
  n->attrs() = attrs;
  inferNode(*n);
  return n->output();
}

Attributes convAttrs(int64_t k, int64_t stride, int64_t group = 1) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  const int64_t p = k / 2;
  a.set("pads", std::vector<int64_t>{p, p, p, p});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("group", group);
  return a;
}

struct Region {
  std::unique_ptr<Graph> graph;
  // Names of conv outputs that must be stored NHWC, and of those that must stay NCHW.
  std::vector<std::string> nhwc, nchw;
};

// x[1,5,13,11] -> Conv 3x3 (7) c1 -> Relu -> depthwise 3x3 s2 (7) c2 -> Conv 1x1 (19) c3
//   -> Conv 1x1 (19) + c3 (residual) -> Relu r4 -> Conv 3x3 (3) c5 -> Flatten -> out0
// c3 is also read by Conv 1x1 (6) c6 -> Transpose -> out1; c2 also feeds Sigmoid -> out2.
// Region edges: c2 (a Sigmoid reads it), c5 (Flatten), c6 (Transpose); c1, c3 and r4 are inside.
Region regionGraph() {
  Region r{std::make_unique<Graph>(), {}, {}};
  Graph& g = *r.graph;
  Value* x = g.addInput("x", DType::Float32, {1, 5, 13, 11});
  Value* c1 =
      addOp(g, "Conv", {x, g.addConstant(randomTensor({7, 5, 3, 3}, 1)), g.addConstant(randomTensor({7}, 2))},
            convAttrs(3, 1));
  Value* r1 = addOp(g, "Relu", {c1});
  Value* c2 = addOp(g, "Conv", {r1, g.addConstant(randomTensor({7, 1, 3, 3}, 3))}, convAttrs(3, 2, 7));
  Value* c3 = addOp(g, "Conv", {c2, g.addConstant(randomTensor({19, 7, 1, 1}, 4))}, convAttrs(1, 1));
  Value* c4 = addOp(g, "Conv", {c3, g.addConstant(randomTensor({19, 19, 1, 1}, 5))}, convAttrs(1, 1));
  Value* s4 = addOp(g, "Add", {c4, c3});
  Value* r4 = addOp(g, "Relu", {s4});
  Value* c5 = addOp(g, "Conv", {r4, g.addConstant(randomTensor({3, 19, 3, 3}, 6))}, convAttrs(3, 1));
  Attributes axis;
  axis.set("axis", int64_t{1});
  g.addOutput(addOp(g, "Flatten", {c5}, axis));
  Value* c6 = addOp(g, "Conv", {c3, g.addConstant(randomTensor({6, 19, 1, 1}, 7))}, convAttrs(1, 1));
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  g.addOutput(addOp(g, "Transpose", {c6}, perm));
  g.addOutput(addOp(g, "Sigmoid", {c2}));
  g.verify();
  r.nhwc = {r1->name(), c3->name(), r4->name()};  // r1 / r4: the fused Conv+Relu outputs
  r.nchw = {c2->name(), c5->name(), c6->name()};
  return r;
}

const Node* producerOf(const Graph& g, const std::string& value) {
  for (const Node* n : g.nodes()) {
    if (n->output()->name() == value) return n;
  }
  return nullptr;
}

bool storedNhwc(const Graph& g, const std::string& value) {
  const Node* n = producerOf(g, value);
  return n && n->attrs().s("y_layout", "NCHW") == "NHWC";
}

bool haveConvAct() {
  return OpRegistry::instance().find("ConvAct", kNpucDomain) != nullptr;
}

TEST(HostLayout, MarksConvChainsAndStopsAtLayoutSensitiveReaders) {
  if (!haveConvAct()) GTEST_SKIP() << "ai.npuc ConvAct is not registered in this build";
  Region r = regionGraph();
  Executor ex(*r.graph);
  const Graph& compiled = ex.compiledGraph();
  for (const std::string& v : r.nhwc) EXPECT_TRUE(storedNhwc(compiled, v)) << v << " should be NHWC";
  for (const std::string& v : r.nchw) {
    ASSERT_NE(producerOf(compiled, v), nullptr) << v;
    EXPECT_FALSE(storedNhwc(compiled, v)) << v << " is read by a layout-sensitive op and must stay NCHW";
  }
  // The conv after an NHWC value reads it as NHWC; the residual ConvAct adds c3 in NHWC.
  const Node* c5 = producerOf(compiled, r.nchw[1]);
  EXPECT_EQ(c5->attrs().s("x_layout", "NCHW"), "NHWC");
  Executor nchw(*r.graph, ExecutorOptions{true, false});
  for (const Node* n : nchw.compiledGraph().nodes()) {
    EXPECT_FALSE(n->attrs().has("x_layout") || n->attrs().has("y_layout")) << n->name();
  }
}

TEST(HostLayout, AgreesWithNchwRunAndReference) {
  if (!haveConvAct()) GTEST_SKIP() << "ai.npuc ConvAct is not registered in this build";
  Region r = regionGraph();
  Executor nhwc(*r.graph);
  Executor nchw(*r.graph, ExecutorOptions{true, false});
  for (uint32_t seed : {11u, 12u}) {
    const Tensor x = randomTensor({1, 5, 13, 11}, seed);
    const std::vector<Tensor> a = nhwc.run({x});
    const std::vector<Tensor> b = nchw.run({x});
    const std::vector<Tensor> want = evalGraph(*r.graph, {{"x", x}});
    ASSERT_EQ(a.size(), want.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LE(maxAbsDiff(a[i], b[i]), 1e-4) << "output " << i;
      EXPECT_LE(maxAbsDiff(a[i], want[i]), 1e-4) << "output " << i;
    }
  }
}

TEST(HostLayout, RefusesAnUnknownLayoutName) {
  if (!haveConvAct()) GTEST_SKIP() << "ai.npuc ConvAct is not registered in this build";
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {1, 3, 4, 4});
  Node* n = g.appendNode("ConvAct", {x, g.addConstant(randomTensor({2, 3, 1, 1}, 1))}, 1);
  n->setDomain(kNpucDomain);
  n->attrs().set("y_layout", std::string("NCHW16c"));
  EXPECT_THROW(inferNode(*n), ShapeError);
}

TEST(ExecutorProfile, ReportsEveryCompiledNodeAndMatchesRun) {
  Region r = regionGraph();
  Executor ex(*r.graph);
  const Tensor x = randomTensor({1, 5, 13, 11}, 3);
  std::vector<Tensor> outs;
  std::vector<TensorView> in{TensorView(x)}, out;
  for (const IoInfo& o : ex.outputs()) {
    outs.emplace_back(o.dtype, o.shape);
    out.emplace_back(outs.back());
  }
  const std::vector<NodeTiming> rows = ex.profile(in, out, 2);
  ASSERT_EQ(rows.size(), ex.compiledGraph().nodeList().size());
  double total = 0;
  for (const NodeTiming& row : rows) {
    EXPECT_GE(row.ms, 0.0) << row.node;
    total += row.ms;
  }
  EXPECT_GT(total, 0.0);
  const std::vector<Tensor> want = ex.run({x});
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(maxAbsDiff(outs[i], want[i]), 0.0) << "output " << i;
  EXPECT_THROW(ex.profile(in, out, 0), InputError);
}

TEST(ExecutorThreads, SmallGraphRunsSeriallyAndRestoresTheCallersSetting) {
  Region r = regionGraph();
  ExecutorOptions serial_opts;
  serial_opts.serial_below_macs = INT64_MAX;  // every graph counts as small
  ExecutorOptions parallel_opts;
  parallel_opts.serial_below_macs = 0;
  omp_set_num_threads(2);
  Executor serial(*r.graph, serial_opts);
  EXPECT_EQ(omp_get_max_threads(), 2);
  Executor parallel(*r.graph, parallel_opts);
  const Tensor x = randomTensor({1, 5, 13, 11}, 4);
  const std::vector<Tensor> a = serial.run({x});
  EXPECT_EQ(omp_get_max_threads(), 2);
  const std::vector<Tensor> b = parallel.run({x});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(maxAbsDiff(a[i], b[i]), 1e-5) << "output " << i;
}

}  // namespace
}  // namespace npuc
