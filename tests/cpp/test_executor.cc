// The planned FP32 executor: its arena plan is sound and tight, it computes what the reference
// evaluator computes, it rejects bad inputs by name, it is safe to share between threads, and
// host fusion does not change results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "opset/eval.h"
#include "runtime/executor.h"
#include "runtime/host_fusion.h"
#include "runtime/memory_planner.h"
#include "tensor_test_util.h"

namespace npuc {
namespace {

using testutil::maxAbsDiff;

// This file's inputs are uniform in [-2, 2).
Tensor randomTensor(const Shape& shape, uint32_t seed) {
  return testutil::randomTensor(shape, seed, -2.0f, 2.0f);
}

// ---------------------------------------------------------------- graph building helpers

Value* addOp(Graph& g, const std::string& op, const std::vector<Value*>& ins, const Attributes& attrs = {},
             const std::string& domain = "") {
  Node* n = g.appendNode(op, ins, 1);
  n->setDomain(domain);
  n->attrs() = attrs;
  inferNode(*n);
  return n->output();
}

Attributes intAttr(const std::string& name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

Value* i64Const(Graph& g, const std::vector<int64_t>& v) {
  return g.addConstant(Tensor::fromVector(v, {int64_t(v.size())}));
}

// x[1,16,32,32] -> Relu -> Concat(a,a) -> Sigmoid -> Slice(4 channels) -> Neg -> Exp -> out
// Sizes go 1, 2, 2, 1/4, 1/4 units: the lower bound is set by Concat/Sigmoid overlapping.
std::unique_ptr<Graph> chainGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 16, 32, 32});
  Value* a = addOp(*g, "Relu", {x});
  Value* b = addOp(*g, "Concat", {a, a}, intAttr("axis", 1));
  Value* c = addOp(*g, "Sigmoid", {b});
  Value* d = addOp(*g, "Slice", {c, i64Const(*g, {0}), i64Const(*g, {4}), i64Const(*g, {1})});
  Value* e = addOp(*g, "Neg", {d});
  Value* f = addOp(*g, "Exp", {e});
  g->addOutput(f);
  g->verify();
  return g;
}

// x -> Relu a -> {Sigmoid b, Concat(a,a) c -> Slice d} -> Add(b, d) -> Relu out
std::unique_ptr<Graph> diamondGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 16, 32, 32});
  Value* a = addOp(*g, "Relu", {x});
  Value* b = addOp(*g, "Sigmoid", {a});
  Value* c = addOp(*g, "Concat", {a, a}, intAttr("axis", 1));
  Value* d = addOp(*g, "Slice", {c, i64Const(*g, {8}), i64Const(*g, {24}), i64Const(*g, {1})});
  Value* e = addOp(*g, "Add", {b, d});
  Value* f = addOp(*g, "Relu", {e});
  g->addOutput(f);
  g->verify();
  return g;
}

// Two inputs, a Reshape of an intermediate (aliased), an output also read later, a constant
// output and an input passed straight through as an output.
std::unique_ptr<Graph> mixedOutputsGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {2, 3, 4});
  Value* y = g->addInput("y", DType::Float32, {2, 12});
  Value* a = addOp(*g, "Tanh", {x});
  Value* r = addOp(*g, "Reshape", {a, i64Const(*g, {2, 12})});
  Value* s = addOp(*g, "Mul", {r, y});  // s is an output and read again below
  Value* t = addOp(*g, "Sub", {s, y});
  Value* k = g->addConstant(Tensor::fromVector<float>({1.5f, -2.0f}, {2}), "k");
  g->addOutput(s);
  g->addOutput(t);
  g->addOutput(k);
  g->addOutput(x);
  g->addOutput(s);  // listed twice
  g->verify();
  return g;
}

std::map<std::string, Tensor> feedsFor(const Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> feeds;
  for (Value* in : g.inputs()) feeds[in->name()] = randomTensor(in->shape(), seed++);
  return feeds;
}

std::vector<Tensor> inputsInOrder(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::vector<Tensor> v;
  for (Value* in : g.inputs()) v.push_back(feeds.at(in->name()));
  return v;
}

void expectMatchesEval(const Graph& g, const ExecutorOptions& opts = {}, double tol = 0.0) {
  Executor ex(g, opts);
  for (uint32_t seed : {1u, 7u}) {
    const auto feeds = feedsFor(g, seed);
    const std::vector<Tensor> want = evalGraph(g, feeds);
    const std::vector<Tensor> got = ex.run(inputsInOrder(g, feeds));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(maxAbsDiff(got[i], want[i]), tol) << "output " << i << " (" << g.outputs()[i]->name() << ")";
    }
  }
}

// ---------------------------------------------------------------- the plan is sound and tight

void expectNoLiveOverlap(const std::vector<PlannedBuffer>& plan) {
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].offset % kTensorAlignment, 0u) << plan[i].values[0];
    for (size_t j = i + 1; j < plan.size(); ++j) {
      const PlannedBuffer& a = plan[i];
      const PlannedBuffer& b = plan[j];
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && overlap && a.bytes && b.bytes)
          << a.values[0] << " and " << b.values[0] << " are live together and share memory";
    }
  }
}

TEST(MemoryPlanner, RandomRequestsNeverOverlap) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> reqs(40);
    for (auto& r : reqs) {
      r.first = rng() % 30;
      r.last = r.first + rng() % 8;
      r.bytes = 1 + rng() % 5000;
    }
    const MemoryPlan plan = planMemory(reqs, 64);
    std::vector<PlannedBuffer> as_plan;
    for (size_t i = 0; i < reqs.size(); ++i) {
      as_plan.push_back(
          {{"b" + std::to_string(i)}, plan.offsets[i], reqs[i].bytes, reqs[i].first, reqs[i].last});
      EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.arena_bytes);
    }
    expectNoLiveOverlap(as_plan);
    EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
  }
}

TEST(MemoryPlanner, LowerBoundIsPeakOfLiveSizes) {
  // [0,1] 64, [1,2] 128, [2,3] 64: peak at steps 1 and 2 is 192.
  const std::vector<BufferRequest> reqs = {{64, 0, 1}, {128, 1, 2}, {64, 2, 3}};
  EXPECT_EQ(liveBytesLowerBound(reqs, 64), 192u);
  EXPECT_EQ(planMemory(reqs, 64).arena_bytes, 192u);
  // Sizes are counted as allocated, rounded up to the alignment.
  EXPECT_EQ(liveBytesLowerBound({{1, 0, 0}}, 64), 64u);
}

TEST(ExecutorPlan, NeverOverlapsLiveValues) {
  for (auto make : {chainGraph, diamondGraph, mixedOutputsGraph}) {
    Executor ex(*make());
    ASSERT_FALSE(ex.memoryPlan().empty());
    expectNoLiveOverlap(ex.memoryPlan());
  }
}

TEST(ExecutorPlan, ChainArenaNearLowerBound) {
  Executor ex(*chainGraph());
  const MemoryPlanStats& s = ex.memoryStats();
  EXPECT_GT(s.lower_bound_bytes, 0u);
  EXPECT_LE(double(s.arena_bytes), 1.05 * double(s.lower_bound_bytes));
  // Concat [1,32,32,32] and Sigmoid of it are live together: 2 x 128 KiB at least.
  EXPECT_GE(s.lower_bound_bytes, size_t{2} * 32 * 32 * 32 * 4);
}

TEST(ExecutorPlan, DiamondArenaNearLowerBound) {
  Executor ex(*diamondGraph());
  const MemoryPlanStats& s = ex.memoryStats();
  EXPECT_LE(double(s.arena_bytes), 1.05 * double(s.lower_bound_bytes));
  // Relu a, Sigmoid b and Concat c (2 units) are live together at the Concat: 4 units of 64 KiB.
  EXPECT_GE(s.lower_bound_bytes, size_t{4} * 16 * 32 * 32 * 4);
}

TEST(ExecutorPlan, GraphInputsAndOutputsAreNotInTheArena) {
  Executor ex(*chainGraph());
  for (const PlannedBuffer& b : ex.memoryPlan()) {
    for (const std::string& v : b.values) {
      EXPECT_NE(v, "x");
      EXPECT_NE(v, ex.outputs()[0].name);
    }
  }
}

TEST(ExecutorPlan, ReshapeOfIntermediateAliases) {
  auto g = mixedOutputsGraph();
  Executor ex(*g);
  EXPECT_EQ(ex.numAliasedSteps(), 1u);
  bool shared = false;
  for (const PlannedBuffer& b : ex.memoryPlan()) shared |= b.values.size() == 2;
  EXPECT_TRUE(shared) << "the Reshape output should share its input's buffer";
}

// Reshape of a graph input and of a graph output alias the caller's buffers; a Reshape whose
// result is a graph output must still run (it writes the caller's output buffer).
std::unique_ptr<Graph> callerAliasGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {4, 6});
  Value* rx = addOp(*g, "Reshape", {x, i64Const(*g, {24})});
  Value* a = addOp(*g, "Relu", {rx});
  Value* ra = addOp(*g, "Reshape", {a, i64Const(*g, {2, 12})});
  Value* b = addOp(*g, "Neg", {ra});
  Value* rb = addOp(*g, "Reshape", {b, i64Const(*g, {3, 8})});
  Value* c = addOp(*g, "Sigmoid", {rb});
  g->addOutput(a);
  g->addOutput(c);
  g->addOutput(ra);  // an output that is itself a Reshape: written, not aliased
  g->verify();
  return g;
}

TEST(ExecutorPlan, AliasesCallerBuffersButNotOutputs) {
  auto g = callerAliasGraph();
  Executor ex(*g);
  // rx aliases the input buffer, rb aliases the arena buffer of b; ra is a graph output.
  EXPECT_EQ(ex.numAliasedSteps(), 2u);
  expectMatchesEval(*g);
}

// ---------------------------------------------------------------- results

TEST(ExecutorRun, MatchesReferenceEvaluator) {
  expectMatchesEval(*chainGraph());
  expectMatchesEval(*diamondGraph());
  expectMatchesEval(*mixedOutputsGraph());
}

TEST(ExecutorRun, WritesCallerBuffersInPlace) {
  auto g = chainGraph();
  Executor ex(*g);
  Tensor x = randomTensor({1, 16, 32, 32}, 3);
  Tensor out(DType::Float32, ex.outputs()[0].shape);
  ex.run({TensorView(x)}, {TensorView(out)});
  const std::vector<Tensor> want = evalGraph(*g, {{"x", x}});
  EXPECT_EQ(maxAbsDiff(out, want[0]), 0.0);
}

TEST(ExecutorRun, RejectsWrongInputs) {
  Executor ex(*mixedOutputsGraph());
  Tensor x = randomTensor({2, 3, 4}, 1);
  Tensor y = randomTensor({2, 12}, 2);
  try {
    ex.run({x});
    FAIL() << "expected InputError for a missing input";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2 input(s), got 1"), std::string::npos) << e.what();
  }
  try {
    ex.run({x, randomTensor({2, 11}, 2)});
    FAIL() << "expected InputError for a wrong shape";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "input 'y' expects float32[2,12], got float32[2,11]");
  }
  try {
    ex.run({x, y.castTo(DType::Float64)});
    FAIL() << "expected InputError for a wrong dtype";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "input 'y' expects float32[2,12], got float64[2,12]");
  }
  std::vector<Tensor> outs;
  std::vector<TensorView> out_views;
  for (const IoInfo& o : ex.outputs()) {
    outs.emplace_back(o.dtype, o.shape);
    out_views.emplace_back(outs.back());
  }
  out_views[1].shape = {24};
  EXPECT_THROW(ex.run({TensorView(x), TensorView(y)}, out_views), InputError);
}

TEST(ExecutorRun, ThreadsAgreeWithSerial) {
  auto g = diamondGraph();
  Executor ex(*g);
  constexpr int kThreads = 8;
  constexpr int kRuns = 50;
  std::vector<Tensor> inputs;
  std::vector<Tensor> serial;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(randomTensor({1, 16, 32, 32}, 100 + t));
    serial.push_back(ex.run({inputs.back()})[0]);
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        // Alternate between two inputs per thread so a stale buffer would show.
        const int which = (t + r) % kThreads;
        if (!(ex.run({inputs[which]})[0] == serial[which])) ++mismatches[t];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// ---------------------------------------------------------------- host fusion

// x[1,8,12,12] -> Conv(3x3, pad 1) -> Add(skip) -> Relu -> Conv(1x1) -> Clip(0,6)
//   -> Conv(3x3, stride 2) -> LeakyRelu -> out; skip = Sigmoid(x) is a same-shape tensor.
std::unique_ptr<Graph> convChainGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 8, 12, 12});
  Attributes conv3;
  conv3.set("kernel_shape", std::vector<int64_t>{3, 3});
  conv3.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Value* w1 = g->addConstant(randomTensor({8, 8, 3, 3}, 11));
  Value* b1 = g->addConstant(randomTensor({8}, 12));
  Value* c1 = addOp(*g, "Conv", {x, w1, b1}, conv3);
  Value* skip = addOp(*g, "Sigmoid", {x});
  Value* s1 = addOp(*g, "Add", {skip, c1});
  Value* r1 = addOp(*g, "Relu", {s1});
  Value* w2 = g->addConstant(randomTensor({16, 8, 1, 1}, 13));
  Value* c2 = addOp(*g, "Conv", {r1, w2});
  Value* lo = g->addConstant(Tensor::scalar(0.0f));
  Value* hi = g->addConstant(Tensor::scalar(6.0f));
  Value* r2 = addOp(*g, "Clip", {c2, lo, hi});
  Attributes strided = conv3;
  strided.set("strides", std::vector<int64_t>{2, 2});
  Value* w3 = g->addConstant(randomTensor({4, 16, 3, 3}, 14));
  Value* b3 = g->addConstant(randomTensor({4}, 15));
  Value* c3 = addOp(*g, "Conv", {r2, w3, b3}, strided);
  Attributes leaky;
  leaky.set("alpha", 0.2f);
  Value* out = addOp(*g, "LeakyRelu", {c3}, leaky);
  g->addOutput(out);
  g->verify();
  return g;
}

size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (Node* node : g.nodes()) n += node->opType() == op;
  return n;
}

bool haveConvAct() {
  const OpRegistry& r = OpRegistry::instance();
  return r.find("Conv") && r.find("ConvAct", kNpucDomain);
}

TEST(HostFusion, FusesConvChainsAndAgreesWithUnfused) {
  if (!haveConvAct()) GTEST_SKIP() << "Conv or ai.npuc ConvAct is not registered in this build";
  auto g = convChainGraph();
  Executor fused(*g);
  Executor plain(*g, ExecutorOptions{false});
  if (hostFusionEnabledByEnv()) {
    EXPECT_EQ(countOps(fused.compiledGraph(), "ConvAct"), 3u);
    EXPECT_EQ(countOps(fused.compiledGraph(), "Relu") + countOps(fused.compiledGraph(), "Add"), 0u);
  }
  EXPECT_EQ(countOps(plain.compiledGraph(), "ConvAct"), 0u);
  EXPECT_EQ(fused.outputs()[0].name, plain.outputs()[0].name);
  for (uint32_t seed : {5u, 6u, 7u}) {
    Tensor x = randomTensor({1, 8, 12, 12}, seed);
    EXPECT_LE(maxAbsDiff(fused.run({x})[0], plain.run({x})[0]), 1e-5);
  }
  expectMatchesEval(*g, ExecutorOptions{}, 1e-5);
}

TEST(HostFusion, LeavesSharedOrExposedIntermediatesAlone) {
  if (!haveConvAct()) GTEST_SKIP() << "Conv or ai.npuc ConvAct is not registered in this build";
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 4, 6, 6});
  Value* w = g->addConstant(randomTensor({4, 4, 1, 1}, 1));
  Value* c1 = addOp(*g, "Conv", {x, w});
  Value* r1 = addOp(*g, "Relu", {c1});
  Value* c2 = addOp(*g, "Conv", {r1, w});
  Value* r2 = addOp(*g, "Relu", {c2});
  g->addOutput(c1);  // c1 is a graph output: Conv1 + Relu must stay apart
  g->addOutput(r2);
  Value* neg = addOp(*g, "Neg", {c2});  // c2 has two users: Conv2 + Relu must stay apart
  g->addOutput(neg);
  size_t n = fuseConvActivations(*g, OpRegistry::instance());
  EXPECT_EQ(n, 0u);
  g->verify();
}

}  // namespace
}  // namespace npuc
