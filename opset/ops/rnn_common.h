// What the recurrent ops (LSTM, GRU, RNN) share: their attributes read and checked once
// (RnnSpec), the gate activations ONNX lets a model choose, and the shape rules. The host kernel
// (rnn_kernel.cpp) and the unroll pass (passes/unroll_recurrent.cpp) both read an RnnSpec, so the
// two agree on gate order, activations and layout by construction.
#pragma once

#include <string>
#include <vector>

#include "opset/registry.h"

namespace npuc::rnn {

enum class Cell { Rnn, Gru, Lstm };

// One gate activation with its parameters (ONNX's activation_alpha/beta, or the op's defaults).
struct Activation {
  std::string name;  // as ONNX spells it: Sigmoid, Tanh, Relu, Affine, LeakyRelu, ...
  float alpha = 0.f, beta = 0.f;
  float apply(float x) const;
};

struct RnnSpec {
  Cell cell = Cell::Rnn;
  std::string op;  // "LSTM", "GRU" or "RNN", for messages
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int64_t dirs = 1;           // 2 for bidirectional
  bool reverse_only = false;  // direction = "reverse"
  int64_t layout = 0;         // 0: X [T, B, I]; 1: X [B, T, I]
  bool has_clip = false;
  float clip = 0.f;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: forget gate = 1 - input gate
  // Per direction: RNN {f}, GRU {f, g}, LSTM {f, g, h}.
  std::vector<std::vector<Activation>> acts;

  int64_t gates() const { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
  int64_t actsPerDirection() const { return cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1; }
  // Direction d runs backwards in time (the second direction of a bidirectional op, or "reverse").
  bool backwards(int64_t d) const { return reverse_only || d == 1; }
};

// Reads the node's attributes and checks every input shape against them (X, W, R and the
// optional B, sequence_lens, initial_h, initial_c, P). Throws ShapeError / UnsupportedOpError
// naming the node, the op and the offending shape or attribute.
RnnSpec resolveRnn(const Node& node, const std::vector<const Shape*>& input_shapes);

// The op's shape inference: Y, Y_h and (LSTM) Y_c from the spec.
void inferRnn(InferContext& ctx);

// The kernel factory (rnn_kernel.cpp).
std::unique_ptr<Kernel> makeRnnKernel(const KernelContext& ctx);

// "LSTM node 'lstm_1'": the prefix of every message about a node.
std::string where(const Node& node);

}  // namespace npuc::rnn
