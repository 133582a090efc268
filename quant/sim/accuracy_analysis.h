// Per-layer accuracy analysis: every float activation of the quantized (or FP16) simulator
// compared with the FP32 model on the same input (cosine, Euclidean distance, SQNR), in
// topological order. Reading it: docs/quantization.md section 10 (look for the first layer
// where SQNR drops sharply).
#pragma once
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "quant/metrics.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {

struct LayerAccuracy {
  std::string value;    // the activation compared
  std::string node;     // its producer ("" for a graph input)
  std::string op_type;  // the producer's op
  // "int8", "fp16", "input", or "int8 (fused with <relu>)" for an output requantized straight to
  // the Relu/Clip that follows it (then compared with that activation's FP32 output).
  std::string precision;
  AccuracyMetrics metrics;
};

// Runs the FP32 graph (planned executor, every activation exposed) and the simulator on `inputs`.
std::vector<LayerAccuracy> analyzeAccuracy(const QuantizedExecutor& sim, const QuantPlan& plan,
                                           const std::vector<Tensor>& inputs);

}  // namespace npuc::quant
