// unroll_recurrent: with an NPU target, LSTM / GRU / RNN become per-step Gemm, activation and
// Mul/Add nodes. Differential: the unrolled graph equals the host kernel's output (rtol 1e-5 of
// the output's magnitude: the unrolled form adds the two biases first) on random inputs, for every
// cell, direction, layout, initial state and optional input; afterwards the partitioner puts every
// node on rk3588's NPU. Refusals, each with its recorded reason: no target, op_target cpu, too
// many steps, non-constant weights, sequence_lens shorter or not constant, an activation with no
// NPU op, a level below 3.
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::cpuNodeCount;
using passtest::GraphBuilder;
using passtest::randomTensor;
using passtest::rk3588Target;
using passtest::runPassChecked;

struct Case {
  std::string label;
  std::string op;  // LSTM, GRU, RNN
  int64_t seq = 5, batch = 2, input = 3, hidden = 4;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, initial_h = false, initial_c = false, peepholes = false;
  Attributes extra{};
  size_t outputs = 2;  // how many outputs the graph reads (Y, Y_h[, Y_c])
};

// gtest names a failing case by its label instead of dumping the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.label;
}

int64_t gates(const std::string& op) {
  return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
}

// The recurrent node with constant weights; X and the initial states are graph inputs.
Node* build(GraphBuilder& b, const Case& c, Value* seq_lens = nullptr) {
  const int64_t d = c.direction == "bidirectional" ? 2 : 1, g = gates(c.op), h = c.hidden;
  const Shape x = c.layout == 0 ? Shape{c.seq, c.batch, c.input} : Shape{c.batch, c.seq, c.input};
  const Shape state = c.layout == 0 ? Shape{d, c.batch, h} : Shape{c.batch, d, h};
  std::vector<Value*> in{b.input("x", x),
                         b.randomConstant({d, g * h, c.input}, 11),
                         b.randomConstant({d, g * h, h}, 12),
                         c.bias ? b.randomConstant({d, 2 * g * h}, 13) : nullptr,
                         seq_lens,
                         c.initial_h ? b.input("h0", state) : nullptr};
  if (c.op == "LSTM") {
    in.push_back(c.initial_c ? b.input("c0", state) : nullptr);
    in.push_back(c.peepholes ? b.randomConstant({d, 3 * h}, 14) : nullptr);
  }
  Attributes a = c.extra;
  a.set("hidden_size", h);
  a.set("direction", c.direction);
  a.set("layout", c.layout);
  Node* n = b.node(c.op, in, a, "rec", c.op == "LSTM" ? 3 : 2);
  for (size_t k = 0; k < c.outputs; ++k) b.output(n->output(k));
  return n;
}

class PassUnrollRecurrent : public ::testing::TestWithParam<Case> {};

TEST_P(PassUnrollRecurrent, MatchesTheHostKernelAndRunsOnTheNpu) {
  const Case c = GetParam();
  GraphBuilder b;
  build(b, c);
  const PassTarget t = rk3588Target();
  ASSERT_EQ(cpuNodeCount(b.graph(), t), 1u) << "the recurrent op starts on the CPU";
  auto r = runPassChecked(b.graph(), "unroll_recurrent", 1e-5, 3, t);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), c.op), 0u);
  EXPECT_GE(countOps(b.graph(), "Gemm"), 1u);
  EXPECT_EQ(cpuNodeCount(b.graph(), t), 0u);
}

Attributes clip(float v) {
  return attrs({{"clip", v}});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassUnrollRecurrent,
    ::testing::Values(
        Case{"lstm_forward", "LSTM", 5, 2, 3, 4, "forward", 0, true, false, false, false, {}, 3},
        Case{"lstm_bidirectional_states_peepholes",
             "LSTM",
             6,
             2,
             3,
             4,
             "bidirectional",
             0,
             true,
             true,
             true,
             true,
             {},
             3},
        Case{"lstm_reverse_layout1_clip_nobias", "LSTM", 4, 3, 5, 3, "reverse", 1, false, true, false, false,
             clip(0.8f), 3},
        Case{"lstm_bidirectional_layout1_c_only",
             "LSTM",
             3,
             2,
             2,
             5,
             "bidirectional",
             1,
             true,
             false,
             true,
             true,
             {},
             3},
        Case{"lstm_input_forget_y_only", "LSTM", 5, 1, 3, 4, "forward", 0, true, true, true, false,
             attrs({{"input_forget", int64_t{1}}}), 1},
        Case{"gru_forward", "GRU", 5, 2, 3, 4, "forward", 0, true, false, false, false, {}, 2},
        Case{"gru_bidirectional_linear_before_reset", "GRU", 7, 2, 3, 4, "bidirectional", 0, true, true,
             false, false, attrs({{"linear_before_reset", int64_t{1}}}), 2},
        Case{"gru_lbr_no_initial_h", "GRU", 4, 2, 3, 4, "forward", 0, true, false, false, false,
             attrs({{"linear_before_reset", int64_t{1}}}), 2},
        Case{"gru_reverse_layout1_hardsigmoid", "GRU", 4, 2, 3, 4, "reverse", 1, true, true, false, false,
             attrs({{"activations", std::vector<std::string>{"HardSigmoid", "Tanh"}},
                    {"activation_alpha", std::vector<float>{0.3f}},
                    {"activation_beta", std::vector<float>{0.45f}}}),
             2},
        Case{"rnn_bidirectional_relu_tanh", "RNN", 5, 2, 3, 4, "bidirectional", 0, true, true, false, false,
             attrs({{"activations", std::vector<std::string>{"Relu", "Tanh"}}}), 2},
        Case{"rnn_one_step", "RNN", 1, 1, 2, 3, "forward", 0, false, false, false, false, {}, 2},
        Case{"rnn_64_steps", "RNN", 64, 1, 2, 3, "reverse", 0, true, false, false, false, {}, 2}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.label; });

// sequence_lens that is a constant equal to the sequence for every row is the same computation.
TEST(PassUnrollRecurrentSeqLens, FullLengthConstantIsUnrolled) {
  Case c{"seq", "GRU"};
  GraphBuilder b;
  Tensor sl(DType::Int32, {c.batch});
  for (int64_t i = 0; i < c.batch; ++i) sl.data<int32_t>()[i] = static_cast<int32_t>(c.seq);
  build(b, c, b.constant(sl));
  auto r = runPassChecked(b.graph(), "unroll_recurrent", 1e-5, 3, rk3588Target());
  EXPECT_EQ(r.changes, 1u);
}

// Each refusal keeps the op, records why, and leaves results unchanged (rtol 0).
TEST(PassUnrollRecurrentRefusals, KeepTheOpAndSayWhy) {
  const PassTarget t = rk3588Target();
  auto refused = [&](GraphBuilder& b, const std::string& why, std::optional<PassTarget> target,
                     int level = 3) {
    auto r = runPassChecked(b.graph(), "unroll_recurrent", 0.0, level, std::move(target));
    EXPECT_EQ(r.changes, 0u) << why;
    if (!why.empty()) {
      EXPECT_TRUE(r.failedWith(why)) << "expected a failure mentioning: " << why;
    }
  };
  {
    GraphBuilder b;
    build(b, Case{"x", "LSTM"});
    refused(b, "no NPU target", std::nullopt);
  }
  {
    GraphBuilder b;
    build(b, Case{"x", "LSTM"});
    refused(b, "", t, 2);  // a level-3 rewrite: skipped below it
  }
  {
    GraphBuilder b;
    build(b, Case{"x", "LSTM"});
    PassTarget cpu = t;
    cpu.op_target["rec"] = "cpu";
    refused(b, "op_target keeps it on the CPU", cpu);
  }
  {
    GraphBuilder b;
    Case c{"x", "GRU"};
    c.seq = 65;
    build(b, c);
    refused(b, "sequence length 65 is outside [1, 64]", t);
  }
  {
    GraphBuilder b;
    Tensor sl(DType::Int32, {2});
    sl.data<int32_t>()[0] = 5;
    sl.data<int32_t>()[1] = 3;
    build(b, Case{"x", "RNN"}, b.constant(sl));
    refused(b, "sequence_lens[1] = 3 is shorter than the sequence (5)", t);
  }
  {
    GraphBuilder b;
    build(b, Case{"x", "RNN"}, b.input("sl", {2}, DType::Int32));
    std::unique_ptr<Graph> original = b.graph().clone();
    PassContext ctx;
    ctx.target = t;
    ctx.current_pass = "unroll_recurrent";
    // Random int32 feeds would be out-of-range lengths, so this one is checked without evaluation.
    EXPECT_EQ(createPass("unroll_recurrent")->run(b.graph(), ctx), 0u);
    bool found = false;
    for (const MatchFailure& f : ctx.match_failures)
      found |= f.reason.find("sequence_lens is not a constant") != std::string::npos;
    EXPECT_TRUE(found);
  }
  {
    GraphBuilder b;
    Value* w = b.input("w", {1, 4, 3});
    b.output(
        b.node("RNN", {b.input("x", {5, 2, 3}), w, b.randomConstant({1, 4, 4}, 1)}, {}, "rec", 2)->output(0));
    refused(b, "W is not a constant", t);
  }
  {
    GraphBuilder b;
    Case c{"x", "RNN"};
    c.extra = attrs({{"activations", std::vector<std::string>{"ScaledTanh"}}});
    build(b, c);
    refused(b, "activation ScaledTanh has no NPU op", t);
  }
}

}  // namespace
}  // namespace npuc
