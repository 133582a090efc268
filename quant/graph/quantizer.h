// Graph-level INT8 quantization: from an FP32 graph and calibrated activation ranges to a
// QuantPlan (docs/quantization.md). The graph itself is not modified.
//
//   activations   asymmetric int8 per tensor, from the calibrated range of the value;
//   weights       symmetric int8 per output channel ("channel") or per tensor ("layer");
//   biases        int32 at s_in * s_w[c];
//   shared scale  data movement, MaxPool, Relu/Clip: output keeps input 0's parameters;
//   fused clamp   a Conv/Gemm/MatMul/Add whose only consumer is a Relu/Clip is requantized
//                 straight to that activation's calibrated range (the activation then clamps);
//   FP16          nodes without an int8 kernel, and every node named in hybrid_layers.
#pragma once
#include <map>
#include <set>
#include <string>

#include "ir/graph.h"
#include "quant/calibrate.h"
#include "quant/graph/quant_plan.h"

namespace npuc::quant {

struct QuantizerOptions {
  // quantized_dtype and weight groups (quant/quant_scheme.h).
  QuantScheme scheme;
  WeightGranularity granularity = WeightGranularity::PerChannel;
  // Node names computed in FP16 whatever their op (RKNN's hybrid quantization).
  std::set<std::string> hybrid_layers;
  // Parameters fixed by an imported QDQ / QAT model, by value name (activations and weights): the
  // plan takes them as given instead of deriving them from `ranges`.
  std::map<std::string, TensorQuant> given;
};

// Gives every weight or bias input of a MAC op (OpTrait::WeightLinear: Conv, ConvTranspose, Gemm,
// MatMul; inputs 1 and 2) a constant of its own when that constant has other readers. The plan is
// keyed by value: a constant read as a weight and as an element-wise operand (CSE merges equal
// constants, e.g. a zero LayerNorm bias and a zero Linear bias), or as the bias of two layers with
// different input scales, would need two sets of parameters. Run it on the graph to be quantized,
// before buildQuantPlan (the calibrator's ranges are per activation and do not change). Returns the
// number of constants added. The FP32 computation is unchanged.
size_t separateSharedParameters(Graph& graph);

// `ranges` holds a calibrated clip range for every float activation (Calibrator::ranges).
// Expects separateSharedParameters to have run: a shared weight or bias is a ConfigError naming it.
// Throws ConfigError naming a hybrid layer that is not a node of the graph, or an activation
// without a range.
QuantPlan buildQuantPlan(const Graph& graph, const std::map<std::string, ClipRange>& ranges,
                         const QuantizerOptions& options);

// The output-channel layout of a MAC node's constant weight (input 1): Conv, Gemm, MatMul.
WeightChannelLayout weightLayoutOf(const Node& node);
// The node's int8 weights at the scales the plan holds for them: the quantizer decides the
// scales once (max|w| / 127, floored for the int32 bias); the simulator, the lowering and the
// QDQ export read them here. Throws ConfigError if the plan has no entry for the weight.
QuantizedWeights quantizeNodeWeights(const Node& node, const QuantPlan& plan);
// The integers of MAC node `node`'s bias (input 2) at s_x * s_w[c], the one place every reader
// (simulator, QDQ export) takes them from: the integers an imported QDQ file fixed
// (TensorQuant::given_values) when the plan holds them, else the float constant quantized (int32 by
// quantizeBias, int64 by quantizeBiasWide for the wide-accumulator schemes). Zeros without a bias.
std::vector<int64_t> nodeBiasIntegers(const Node& node, const QuantPlan& plan, float s_x,
                                      const std::vector<float>& s_w);

}  // namespace npuc::quant
