// Helpers for the one-node op tests of the elementwise, reduction and ai.npuc families: build a
// graph holding a single node, run its shape inference and its host kernel, and compute numpy
// broadcast references independently of the kernels' own broadcasting code.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/eval.h"

namespace npuc {
namespace ewtest {

// One input of the node under test: a runtime value (graph input) or a constant.
struct In {
  Tensor t;
  bool constant = false;
};
inline In constant(Tensor t) {
  return In{std::move(t), true};
}

// A graph with one node. Omitted optional inputs are passed as In{} (an undefined tensor).
class OneNode {
 public:
  OneNode(const std::string& op, std::vector<In> inputs, size_t num_outputs = 1,
          const std::string& domain = "")
      : inputs_(std::move(inputs)) {
    std::vector<Value*> vals;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const In& in = inputs_[i];
      if (!in.t.defined()) {
        vals.push_back(nullptr);
      } else if (in.constant) {
        vals.push_back(g_.addConstant(in.t, "c" + std::to_string(i)));
      } else {
        vals.push_back(g_.addInput("x" + std::to_string(i), in.t.dtype(), in.t.shape()));
      }
    }
    node_ = g_.appendNode(op, vals, num_outputs, "node_under_test");
    node_->setDomain(domain);
  }

  OneNode& attr(const std::string& name, AttrValue v) {
    node_->attrs().set(name, std::move(v));
    return *this;
  }
  Node& node() { return *node_; }

  // Shape inference only; returns output i's (dtype, shape) via the node.
  Value* infer() {
    inferNode(*node_);
    return node_->output(0);
  }
  std::vector<Tensor> run() {
    inferNode(*node_);
    std::vector<const Tensor*> ptrs;
    for (const In& in : inputs_) ptrs.push_back(in.t.defined() ? &in.t : nullptr);
    return evalNode(*node_, ptrs);
  }
  Tensor run0() { return run().at(0); }

 private:
  Graph g_;
  Node* node_ = nullptr;
  std::vector<In> inputs_;
};

inline Tensor floats(std::vector<float> v, Shape shape) {
  return Tensor::fromVector<float>(v, std::move(shape));
}
inline Tensor int64s(std::vector<int64_t> v, Shape shape) {
  return Tensor::fromVector<int64_t>(v, std::move(shape));
}

// Deterministic uniform values in [lo, hi).
inline Tensor randomFloats(Shape shape, float lo, float hi, uint32_t seed) {
  Tensor t(DType::Float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Integers uniform in [lo, hi] as a tensor of T (int8, uint8, int32, ...).
template <typename T>
Tensor randomInts(Shape shape, int lo, int hi, uint32_t seed) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(dist(rng));
  return t;
}

// Flat index into `in` (right-aligned, size-1 dims broadcast) of output element `flat` of `out`.
inline int64_t broadcastIndex(const Shape& out, const Shape& in, int64_t flat) {
  int64_t idx = 0, in_stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (k < in.size()) {
      const int64_t in_dim = in[in.size() - 1 - k];
      if (in_dim != 1) idx += coord * in_stride;
      in_stride *= in_dim;
    }
  }
  return idx;
}

// Compares float tensors elementwise with |a - e| <= atol + rtol * |e| (NaN matches NaN).
inline void expectClose(const Tensor& actual, const Tensor& expected, float rtol = 1e-5f,
                        float atol = 1e-6f) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(shapeStr(actual.shape()), shapeStr(expected.shape()));
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.doubleAt(i), e = expected.doubleAt(i);
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "at " << i;
    } else if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "at " << i;
    } else {
      EXPECT_NEAR(a, e, atol + rtol * std::fabs(e)) << "at flat index " << i;
    }
  }
}

// Expects `fn` to throw E whose message contains `needle`.
template <typename E, typename Fn>
void expectThrowWith(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception mentioning '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace ewtest
}  // namespace npuc
