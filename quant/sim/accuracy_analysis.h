// Per-layer accuracy analysis: every float activation of the quantized (or FP16) simulator
// compared with the FP32 model on the same input (cosine, Euclidean distance, SQNR), in
// topological order, two ways (RKNN's "entire" and "single" columns):
//   entire  the simulator run end to end: the error accumulated up to this layer;
//   single  this layer's step alone, fed the FP32 values of its inputs quantized with their own
//           parameters: the error the layer itself adds (what auto-hybrid thresholds).
// Reading it: docs/quantization.md section 10 (look for the first layer where SQNR drops
// sharply, and for a low single cosine: that layer is the one to keep in FP16).
#pragma once
#include <functional>
#include <map>
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
  // the Relu/Clip that follows it (then compared with that activation's FP32 output), or
  // "int8 (clamped by <relu> after the Concat)" for a Concat input put on the grid of the
  // Concat's fused clamp (then compared with the clamp of its FP32 value).
  std::string precision;
  AccuracyMetrics metrics;  // entire: the end-to-end simulator run
  AccuracyMetrics single;   // this layer alone on quantized FP32 inputs (== metrics for an input)
};

// The tensors the rows were computed from, by value name (float graph inputs and node outputs):
// the FP32 golden run, the end-to-end simulator run (dequantized) and the isolated run.
struct AccuracyTensors {
  std::map<std::string, Tensor> fp32, simulated, single;
};

// progress(done, total) in units of one simulator step: the FP32 run and the end-to-end run count
// as one step per node each, then each node's isolated run one (so total = 3 x nodes' steps).
using AccuracyProgress = std::function<void(size_t done, size_t total)>;

// Runs the FP32 graph (planned executor, every activation exposed) and the simulator (end to end
// and node by node) on `inputs`. With `tensors`, also hands back every tensor compared.
std::vector<LayerAccuracy> analyzeAccuracy(const QuantizedExecutor& sim, const QuantPlan& plan,
                                           const std::vector<Tensor>& inputs,
                                           AccuracyTensors* tensors = nullptr,
                                           const AccuracyProgress& progress = {});

}  // namespace npuc::quant
