// The program unroll_recurrent writes for one direction of an LSTM, GRU or RNN: the node builder
// it uses and the per-step cell equations (ONNX's, in Gemm / activation / Mul / Add nodes). The
// pattern itself (when to unroll, how the outputs are assembled) is passes/unroll_recurrent.cpp.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "opset/ops/rnn_common.h"
#include "passes/core/rewriter.h"

namespace npuc::unroll {

// Activations the unrolled program can write as one ONNX op, with that op's attributes.
bool npuActivation(const rnn::Activation& a);

// Builds the nodes of one unrolling, all named after the recurrent node.
class Builder {
 public:
  Builder(Rewriter& rw, const Node& node, const rnn::RnnSpec& s) : rw_(rw), base_(node.name()), s_(s) {}

  Value* op(const std::string& type, const std::vector<Value*>& in, const Attributes& a = {}) {
    return rw_.create(type, in, a, base_)->output();
  }
  std::vector<Value*> split(Value* x, int64_t axis, size_t n) {
    if (n == 1) return {x};
    Attributes a;
    a.set("axis", axis);
    Node* sp = rw_.create("Split", {x}, a, base_, n);
    return sp->outputs();
  }
  Value* concat(const std::vector<Value*>& parts, int64_t axis) {
    if (parts.size() == 1) return parts[0];
    Attributes a;
    a.set("axis", axis);
    return op("Concat", parts, a);
  }
  Value* reshape(Value* x, const Shape& shape) { return op("Reshape", {x, ints(shape)}); }
  Value* transpose(Value* x, const std::vector<int64_t>& perm) {
    Attributes a;
    a.set("perm", perm);
    return op("Transpose", {x}, a);
  }
  Value* gemm(Value* a, Value* b, Value* c = nullptr) {
    std::vector<Value*> in{a, b};
    if (c) in.push_back(c);
    return op("Gemm", in);
  }
  Value* constant(Tensor t) { return rw_.constant(std::move(t), base_ + "_c"); }
  Value* one() {
    if (!one_) one_ = constant(Tensor::scalar<float>(1.f));
    return one_;
  }
  // act(clip(x)), as the cell applies them.
  Value* activate(const rnn::Activation& act, Value* x) {
    if (s_.has_clip) {
      if (!clip_lo_) {
        clip_lo_ = constant(Tensor::scalar<float>(-s_.clip));
        clip_hi_ = constant(Tensor::scalar<float>(s_.clip));
      }
      x = op("Clip", {x, clip_lo_, clip_hi_});
    }
    return activateNoClip(act, x);
  }
  Value* activateNoClip(const rnn::Activation& act, Value* x) {
    Attributes a;
    if (act.name == "LeakyRelu" || act.name == "Elu" || act.name == "HardSigmoid") a.set("alpha", act.alpha);
    if (act.name == "HardSigmoid") a.set("beta", act.beta);
    return op(act.name, {x}, a);
  }
  Value* ints(const std::vector<int64_t>& v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return rw_.constant(std::move(t), base_ + "_shape");
  }

 private:
  Rewriter& rw_;
  std::string base_;
  const rnn::RnnSpec& s_;
  Value* one_ = nullptr;
  Value* clip_lo_ = nullptr;
  Value* clip_hi_ = nullptr;
};

struct Weights {
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;  // null: no bias
  const Tensor* p = nullptr;  // null: no peepholes
};

// One direction's time steps. Returns the hidden state after each time position (in time order)
// and the final h (and c).
struct DirectionResult {
  std::vector<Value*> h_at;  // h_at[t]: hidden state written at time position t
  Value* h_last = nullptr;
  Value* c_last = nullptr;
};

// Direction d's steps, reading the shared input rows x2d ([T*B, I]) and the initial states h, c
// (null: zero). Nodes go at the rewriter's insertion point.
DirectionResult unrollDirection(Builder& bld, const rnn::RnnSpec& s, const Weights& wt, int64_t d, Value* x2d,
                                Value* h, Value* c);

}  // namespace npuc::unroll
