// LSTM / GRU / RNN host kernel and shape inference: values worked out by hand on one-unit cells,
// the ONNX features the node tests do not reach (sequence_lens with reverse and bidirectional,
// layout 1, clip, input_forget, activation parameters), and bad input named clearly.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "opset/eval.h"
#include "opset/macs.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

Tensor floats(const Shape& shape, const std::vector<float>& v) {
  Tensor t(DType::Float32, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor int32s(const std::vector<int32_t>& v) {
  Tensor t(DType::Int32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

template <typename E, typename Fn>
void expectThrowWith(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "message: " << e.what();
  }
}

std::vector<Tensor> run(GraphBuilder& b, const std::map<std::string, Tensor>& feeds = {}) {
  return evalGraph(b.graph(), feeds);
}

float sigmoid(float x) {
  return 1.f / (1.f + std::exp(-x));
}

// A one-unit RNN over x = [1, 2, 3] (T=3, B=1, I=1): h_t = tanh(w x_t + r h_{t-1} + wb + rb).
TEST(OpsRnn, OneUnitRnnByHand) {
  for (const char* direction : {"forward", "reverse"}) {
    GraphBuilder b;
    Value* x = b.constant(floats({3, 1, 1}, {1, 2, 3}));
    Node* n = b.node("RNN",
                     {x, b.constant(floats({1, 1, 1}, {0.5f})), b.constant(floats({1, 1, 1}, {-0.7f})),
                      b.constant(floats({1, 2}, {0.1f, 0.05f}))},
                     attrs({{"hidden_size", int64_t{1}}, {"direction", std::string(direction)}}), "rnn", 2);
    b.output(n->output(0));
    b.output(n->output(1));
    const auto out = run(b);
    ASSERT_EQ(out[0].shape(), (Shape{3, 1, 1, 1}));
    float h = 0.f;
    float want[3];
    const bool rev = std::string(direction) == "reverse";
    for (int s = 0; s < 3; ++s) {
      const int t = rev ? 2 - s : s;
      h = std::tanh(0.5f * static_cast<float>(t + 1) - 0.7f * h + 0.15f);
      want[t] = h;
    }
    for (int t = 0; t < 3; ++t)
      EXPECT_NEAR(out[0].data<float>()[t], want[t], 1e-6) << direction << " t=" << t;
    EXPECT_NEAR(out[1].data<float>()[0], h, 1e-6) << direction;
  }
}

// A one-unit LSTM step with peepholes, initial c and input_forget, against the ONNX equations.
TEST(OpsRnn, OneUnitLstmStepWithPeepholesAndInputForget) {
  for (int64_t input_forget : {0, 1}) {
    GraphBuilder b;
    const float w[4] = {0.3f, -0.2f, 0.5f, 0.8f}, r[4] = {0.1f, 0.4f, -0.3f, 0.2f},
                p[3] = {0.2f, -0.1f, 0.3f};
    const float x = 1.5f, h0 = 0.25f, c0 = -0.5f;
    Node* n =
        b.node("LSTM",
               {b.constant(floats({1, 1, 1}, {x})), b.constant(floats({1, 4, 1}, {w[0], w[1], w[2], w[3]})),
                b.constant(floats({1, 4, 1}, {r[0], r[1], r[2], r[3]})), nullptr, nullptr,
                b.constant(floats({1, 1, 1}, {h0})), b.constant(floats({1, 1, 1}, {c0})),
                b.constant(floats({1, 3}, {p[0], p[1], p[2]}))},
               attrs({{"hidden_size", int64_t{1}}, {"input_forget", input_forget}}), "lstm", 3);
    for (int k = 0; k < 3; ++k) b.output(n->output(k));
    const auto out = run(b);
    const float i = sigmoid(w[0] * x + r[0] * h0 + p[0] * c0);
    const float f = input_forget ? 1.f - i : sigmoid(w[2] * x + r[2] * h0 + p[2] * c0);
    const float c = f * c0 + i * std::tanh(w[3] * x + r[3] * h0);
    const float o = sigmoid(w[1] * x + r[1] * h0 + p[1] * c);
    EXPECT_NEAR(out[2].data<float>()[0], c, 1e-6);
    EXPECT_NEAR(out[1].data<float>()[0], o * std::tanh(c), 1e-6);
    EXPECT_NEAR(out[0].data<float>()[0], o * std::tanh(c), 1e-6);
  }
}

// A one-unit GRU step, both linear_before_reset forms, with clip and HardSigmoid(alpha, beta).
TEST(OpsRnn, OneUnitGruStepBothResetFormsClipAndActivationParameters) {
  for (int64_t lbr : {0, 1}) {
    GraphBuilder b;
    const float w[3] = {2.0f, -1.0f, 3.0f}, r[3] = {0.5f, 0.7f, -0.9f},
                bias[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    const float x = 1.2f, h0 = 0.6f, clip = 1.5f;
    Node* n = b.node("GRU",
                     {b.constant(floats({1, 1, 1}, {x})), b.constant(floats({1, 3, 1}, {w[0], w[1], w[2]})),
                      b.constant(floats({1, 3, 1}, {r[0], r[1], r[2]})),
                      b.constant(floats({1, 6}, {bias[0], bias[1], bias[2], bias[3], bias[4], bias[5]})),
                      nullptr, b.constant(floats({1, 1, 1}, {h0}))},
                     attrs({{"hidden_size", int64_t{1}},
                            {"linear_before_reset", lbr},
                            {"clip", clip},
                            {"activations", std::vector<std::string>{"HardSigmoid", "Tanh"}},
                            {"activation_alpha", std::vector<float>{0.3f}},
                            {"activation_beta", std::vector<float>{0.4f}}}),
                     "gru", 2);
    b.output(n->output(1));
    const auto out = run(b);
    auto cl = [&](float v) { return std::max(-clip, std::min(clip, v)); };
    auto hs = [](float v) { return std::max(0.f, std::min(1.f, 0.3f * v + 0.4f)); };
    const float z = hs(cl(w[0] * x + bias[0] + r[0] * h0 + bias[3]));
    const float rg = hs(cl(w[1] * x + bias[1] + r[1] * h0 + bias[4]));
    const float pre = lbr ? w[2] * x + bias[2] + rg * (r[2] * h0 + bias[5])
                          : w[2] * x + bias[2] + r[2] * (rg * h0) + bias[5];
    const float ht = std::tanh(cl(pre));
    EXPECT_NEAR(out[0].data<float>()[0], (1.f - z) * ht + z * h0, 1e-6) << "linear_before_reset=" << lbr;
  }
}

// sequence_lens: a row's steps past its length are zeros in Y, Y_h is its state at its length,
// and the backward direction of a bidirectional op starts at the row's last valid step.
TEST(OpsRnn, SequenceLensPadsWithZerosAndReverseStartsAtTheRowsEnd) {
  const int64_t T = 4, B = 2, I = 3, H = 2;
  auto build = [&](GraphBuilder& b, Value* x, Value* sl, int64_t batch) {
    Node* n =
        b.node("GRU",
               {x, b.constant(randomTensor({2, 3 * H, I}, 1)), b.constant(randomTensor({2, 3 * H, H}, 2)),
                b.constant(randomTensor({2, 6 * H}, 3)), sl},
               attrs({{"hidden_size", H}, {"direction", std::string("bidirectional")}}), "gru", 2);
    (void)batch;
    b.output(n->output(0));
    b.output(n->output(1));
  };
  const Tensor xs = randomTensor({T, B, I}, 4);
  GraphBuilder full;
  build(full, full.constant(xs), full.constant(int32s({4, 2})), B);
  const auto got = run(full);
  // Row 1 alone, cut to its 2 steps, is the reference for row 1.
  Tensor x1(DType::Float32, {2, 1, I});
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < I; ++i) x1.data<float>()[t * I + i] = xs.data<float>()[(t * B + 1) * I + i];
  GraphBuilder cut;
  build(cut, cut.constant(x1), nullptr, 1);
  const auto want = run(cut);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t j = 0; j < H; ++j) {
        const float y = got[0].data<float>()[((t * 2 + d) * B + 1) * H + j];
        const float ref = t < 2 ? want[0].data<float>()[(t * 2 + d) * H + j] : 0.f;
        EXPECT_NEAR(y, ref, 1e-6) << "t=" << t << " d=" << d;
      }
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t j = 0; j < H; ++j)
      EXPECT_NEAR(got[1].data<float>()[(d * B + 1) * H + j], want[1].data<float>()[d * H + j], 1e-6);
}

// layout=1 is layout=0 with batch and time (and, for the states, batch and direction) swapped.
TEST(OpsRnn, LayoutOneIsLayoutZeroTransposed) {
  const int64_t T = 3, B = 2, I = 4, H = 3;
  const Tensor x0 = randomTensor({T, B, I}, 5), h0 = randomTensor({2, B, H}, 6),
               c0 = randomTensor({2, B, H}, 7);
  auto swap01 = [](const Tensor& t) {
    Tensor o(DType::Float32, {t.dim(1), t.dim(0), t.dim(2)});
    for (int64_t a = 0; a < t.dim(0); ++a)
      for (int64_t c = 0; c < t.dim(1); ++c)
        for (int64_t k = 0; k < t.dim(2); ++k)
          o.data<float>()[(c * t.dim(0) + a) * t.dim(2) + k] =
              t.data<float>()[(a * t.dim(1) + c) * t.dim(2) + k];
    return o;
  };
  auto build = [&](int64_t layout, const Tensor& x, const Tensor& h, const Tensor& c) {
    GraphBuilder b;
    Node* n =
        b.node("LSTM",
               {b.constant(x), b.constant(randomTensor({2, 4 * H, I}, 8)),
                b.constant(randomTensor({2, 4 * H, H}, 9)), b.constant(randomTensor({2, 8 * H}, 10)), nullptr,
                b.constant(h), b.constant(c)},
               attrs({{"hidden_size", H}, {"direction", std::string("bidirectional")}, {"layout", layout}}),
               "lstm", 3);
    for (int k = 0; k < 3; ++k) b.output(n->output(k));
    return run(b);
  };
  const auto l0 = build(0, x0, h0, c0);
  const auto l1 = build(1, swap01(x0), swap01(h0), swap01(c0));
  ASSERT_EQ(l1[0].shape(), (Shape{B, T, 2, H}));
  ASSERT_EQ(l1[1].shape(), (Shape{B, 2, H}));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t j = 0; j < H; ++j)
          EXPECT_EQ(l1[0].data<float>()[((bb * T + t) * 2 + d) * H + j],
                    l0[0].data<float>()[((t * 2 + d) * B + bb) * H + j]);
  for (int k = 1; k < 3; ++k) {
    const Tensor s = swap01(l0[k]);
    for (int64_t i = 0; i < s.numel(); ++i) EXPECT_EQ(l1[k].data<float>()[i], s.data<float>()[i]);
  }
}

TEST(OpsRnn, BadShapesAndAttributesNameTheNodeOpAndShape) {
  GraphBuilder b;
  Value* x = b.input("x", {5, 2, 3});
  expectThrowWith<ShapeError>(
      [&] {
        b.node("LSTM", {x, b.constant(randomTensor({1, 16, 4}, 1)), b.constant(randomTensor({1, 16, 4}, 2))},
               attrs({{"hidden_size", int64_t{4}}}), "enc_lstm", 3);
      },
      {"LSTM node 'enc_lstm'", "W has shape [1,16,4]", "expected [1,16,3]"});
  expectThrowWith<ShapeError>(
      [&] {
        b.node("GRU",
               {x, b.constant(randomTensor({2, 12, 3}, 1)), b.constant(randomTensor({2, 12, 4}, 2)), nullptr,
                nullptr, b.constant(randomTensor({1, 2, 4}, 3))},
               attrs({{"direction", std::string("bidirectional")}}), "dec_gru", 2);
      },
      {"GRU node 'dec_gru'", "initial_h has shape [1,2,4]", "expected [2,2,4]"});
  expectThrowWith<UnsupportedOpError>(
      [&] {
        b.node("RNN", {x, b.constant(randomTensor({1, 4, 3}, 1)), b.constant(randomTensor({1, 4, 4}, 2))},
               attrs({{"activations", std::vector<std::string>{"Tanh", "Tanh"}}}), "rnn_acts", 2);
      },
      {"RNN node 'rnn_acts'", "activations lists 2 functions, expected 1"});
  expectThrowWith<UnsupportedOpError>(
      [&] {
        b.node("RNN", {x, b.constant(randomTensor({1, 4, 3}, 1)), b.constant(randomTensor({1, 4, 4}, 2))},
               attrs({{"activations", std::vector<std::string>{"Swish"}}}), "rnn_swish", 2);
      },
      {"RNN node 'rnn_swish'", "activation 'Swish'"});
  expectThrowWith<UnsupportedOpError>(
      [&] {
        b.node("RNN", {x, b.constant(randomTensor({1, 4, 3}, 1)), b.constant(randomTensor({1, 4, 4}, 2))},
               attrs({{"direction", std::string("sideways")}}), "rnn_dir", 2);
      },
      {"RNN node 'rnn_dir'", "direction 'sideways'"});
  expectThrowWith<ShapeError>(
      [&] {
        b.node("RNN",
               {b.input("x2", {5, 3}), b.constant(randomTensor({1, 4, 3}, 1)),
                b.constant(randomTensor({1, 4, 4}, 2))},
               {}, "rnn_rank", 2);
      },
      {"RNN node 'rnn_rank'", "X has shape [5,3]", "rank 3"});
}

TEST(OpsRnn, SequenceLengthBeyondTheSequenceIsAnInputErrorAtRunTime) {
  GraphBuilder b;
  Value* sl = b.input("sl", {2}, DType::Int32);
  Node* n = b.node("RNN",
                   {b.input("x", {3, 2, 1}), b.constant(randomTensor({1, 1, 1}, 1)),
                    b.constant(randomTensor({1, 1, 1}, 2)), nullptr, sl},
                   {}, "short_rnn", 2);
  b.output(n->output(0));
  std::map<std::string, Tensor> feeds{{"x", randomTensor({3, 2, 1}, 3)}, {"sl", int32s({3, 7})}};
  expectThrowWith<InputError>([&] { run(b, feeds); },
                              {"RNN node 'short_rnn'", "sequence_lens[1] = 7", "[0, 3]"});
}

// The partitioner's MAC share counts a recurrent op's work: T*B rows through W and R of every gate
// and direction (a CPU-resident LSTM must not look like 0 MACs).
TEST(OpsRnn, MacsCountEveryStepGateAndDirection) {
  GraphBuilder b;
  Node* n = b.node("LSTM",
                   {b.input("x", {7, 2, 5}), b.constant(randomTensor({2, 12, 5}, 1)),
                    b.constant(randomTensor({2, 12, 3}, 2))},
                   attrs({{"direction", std::string("bidirectional")}}), "lstm", 3);
  EXPECT_EQ(nodeMacs(*n), 7 * 2 * (2 * 12 * 5 + 2 * 12 * 3));
}

}  // namespace
}  // namespace npuc
