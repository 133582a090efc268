// The recurrent op family: LSTM, GRU and RNN (ONNX opset 14 forms, which read the older ones too:
// layout defaults to 0). Shape rules in rnn_common.cpp, the host kernel in rnn_kernel.cpp, and
// the NPU form in passes/unroll_recurrent.cpp.
#include "opset/ops/rnn_common.h"

namespace npuc {

namespace {

// Every recurrent op that is still one node when the partitioner sees it: unroll_recurrent turns
// the ones it can into MatMul/Add/Sigmoid/Tanh/Mul steps the NPU runs, and records why it left
// the others (OptimizationReport match failures).
constexpr const char* kCpuReason =
    "the NPU has no recurrent op; on NPU targets unroll_recurrent rewrites it into per-step Gemm and "
    "activation nodes when it can (at most 64 static steps, constant weights, sequence_lens absent or "
    "full length, activations the NPU has, optimization level 3: the build report says why not), and "
    "what it leaves runs step by step on the CPU";

void add(OpRegistry& reg, const char* op, int max_inputs, int max_outputs, const char* doc) {
  reg.add(op)
      .quantClass(QuantClass::Float)
      .inputs(3, max_inputs)
      .outputs(1, max_outputs)
      .infer(rnn::inferRnn)
      .kernel(rnn::makeRnnKernel)
      .types({DType::Float32})
      .since(14)
      .cpuOnly(kCpuReason)
      .doc(doc);
}

}  // namespace

void registerRnnOps(OpRegistry& reg) {
  add(reg, "LSTM", 8, 3,
      "LSTM (gates i,o,f,c): forward/reverse/bidirectional, sequence_lens, initial_h/c, peepholes, "
      "clip, input_forget, activations with alpha/beta, layout 0/1; outputs Y, Y_h, Y_c");
  add(reg, "GRU", 6, 2,
      "GRU (gates z,r,h): forward/reverse/bidirectional, sequence_lens, initial_h, "
      "linear_before_reset, clip, activations with alpha/beta, layout 0/1; outputs Y, Y_h");
  add(reg, "RNN", 6, 2,
      "Elman RNN: forward/reverse/bidirectional, sequence_lens, initial_h, clip, activation with "
      "alpha/beta, layout 0/1; outputs Y, Y_h");
}

}  // namespace npuc
