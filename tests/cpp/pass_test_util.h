// Shared helpers for the pass tests: terse graph building (shape inference runs on every node, as
// the importer would), running one pass with the checks every pass must survive, and the
// differential check (original vs rewritten graph on random inputs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/eval.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pass_manager.h"
#include "passes/core/pass_registry.h"
#include "tensor_test_util.h"

namespace npuc {
namespace passtest {

using testutil::randomTensor;

inline Tensor ints(const std::vector<int64_t>& v) {
  return int64Vector(v);
}

inline Attributes attrs(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Builds a graph node by node, inferring each node's output types.
class GraphBuilder {
 public:
  GraphBuilder() : g_(std::make_unique<Graph>()) {}
  Graph& graph() { return *g_; }
  std::unique_ptr<Graph> release() { return std::move(g_); }

  Value* input(const std::string& name, const Shape& shape, DType dtype = DType::Float32) {
    return g_->addInput(name, dtype, shape);
  }
  Value* constant(Tensor t, const std::string& name = "") { return g_->addConstant(std::move(t), name); }
  Value* randomConstant(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    return constant(randomTensor(shape, seed, lo, hi));
  }
  Value* scalar(float v) { return constant(Tensor::scalar<float>(v)); }
  Value* int64s(const std::vector<int64_t>& v) { return constant(ints(v)); }

  Node* node(const std::string& op, const std::vector<Value*>& inputs, const Attributes& a = {},
             const std::string& name = "", size_t num_outputs = 1) {
    Node* n = g_->appendNode(op, inputs, num_outputs, name);
    n->attrs() = a;
    inferNode(*n);
    return n;
  }
  Value* op(const std::string& op, const std::vector<Value*>& inputs, const Attributes& a = {},
            const std::string& name = "") {
    return node(op, inputs, a, name)->output();
  }
  void output(Value* v) { g_->addOutput(v); }

 private:
  std::unique_ptr<Graph> g_;
};

inline size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* node : g.nodes()) n += node->opType() == op;
  return n;
}

inline std::map<std::string, Tensor> randomFeeds(const Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> feeds;
  for (const Value* in : g.inputs()) feeds[in->name()] = randomTensor(in->shape(), seed++);
  return feeds;
}

// Re-runs shape inference on a copy of every node and expects the stored types to agree.
inline void expectTypesConsistent(const Graph& g) {
  auto copy = g.clone();
  for (Node* n : copy->nodes()) {
    std::vector<std::pair<DType, Shape>> stored;
    for (const Value* out : n->outputs()) stored.emplace_back(out->dtype(), out->shape());
    inferNode(*n);
    for (size_t i = 0; i < stored.size(); ++i) {
      EXPECT_EQ(n->output(i)->dtype(), stored[i].first) << "node " << n->name();
      EXPECT_EQ(n->output(i)->shape(), stored[i].second)
          << "node " << n->name() << " (" << n->opType() << ")";
    }
  }
}

// |a - b| <= rtol * max(|b|, max|reference|): relative to the tensor's magnitude, so values that
// are tiny only by cancellation do not demand an absurd precision.
inline void expectClose(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double scale = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.doubleAt(i)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.doubleAt(i), b = want.doubleAt(i);
    if (std::isnan(b)) {
      ASSERT_TRUE(std::isnan(a)) << what << " element " << i;
      continue;
    }
    ASSERT_LE(std::abs(a - b), rtol * std::max(std::abs(b), scale) + 1e-30)
        << what << " element " << i << ": " << a << " vs " << b;
  }
}

// Evaluates both graphs on the same random inputs (several seeds) and compares every output.
inline void expectSameResults(const Graph& original, const Graph& rewritten, double rtol, int seeds = 3) {
  ASSERT_EQ(original.outputs().size(), rewritten.outputs().size());
  for (int s = 0; s < seeds; ++s) {
    auto feeds = randomFeeds(original, 1000u + 17u * static_cast<uint32_t>(s));
    std::vector<Tensor> want = evalGraph(original, feeds);
    std::vector<Tensor> got = evalGraph(rewritten, feeds);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(original.outputs()[i]->name(), rewritten.outputs()[i]->name()) << "output names are API";
      expectClose(got[i], want[i], rtol, "output " + original.outputs()[i]->name());
    }
  }
}

struct PassRun {
  size_t changes = 0;
  PassContext ctx;
  bool failedWith(const std::string& fragment) const {
    for (const MatchFailure& f : ctx.match_failures) {
      if (f.reason.find(fragment) != std::string::npos) return true;
    }
    return false;
  }
};

// Target-stage passes (legalize_conv_stride, reduce_transpose_rank): RK3588 computing in int8, and
// how many nodes its partition puts on the CPU.
inline PassTarget rk3588Target() {
  return PassTarget{&socProfile("rk3588"), NpuDType::Int8, {}};
}
inline size_t cpuNodeCount(const Graph& g, const PassTarget& t) {
  return partitionGraph(g, *t.soc, t.op_target).count(Device::Cpu);
}

// Runs pass `name` once at `level`, then checks what every pass must keep true: the graph
// verifies, every node is typed consistently with shape inference, and (differential) results
// match the original within `rtol` on random inputs. Target-specific passes read `target`.
inline PassRun runPassChecked(Graph& g, const std::string& name, double rtol = 1e-5, int level = 3,
                              std::optional<PassTarget> target = std::nullopt) {
  std::unique_ptr<Graph> original = g.clone();
  PassRun r;
  r.ctx.optimization_level = level;
  r.ctx.target = std::move(target);
  r.ctx.current_pass = name;
  r.changes = createPass(name)->run(g, r.ctx);
  verifyOptimizedGraph(g, "pass '" + name + "'");
  expectTypesConsistent(g);
  expectSameResults(*original, g, rtol);
  return r;
}

}  // namespace passtest
}  // namespace npuc
