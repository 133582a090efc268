// A planned darknet network + its weights -> the npuc IR, in the canonical ops of
// opset/registry.h: NCHW, input `data` [1,C,H,W] (darknet's RGB image scaled to 0..1, CHW), each
// layer's output value named `layer<N>_<type>` after darknet's layer numbering, so a user who
// reads the .cfg finds the tensor.
//
// Canonicalization (why each choice is made):
//  * batch_normalize is folded into the Conv / Gemm weights and bias here, with darknet's own
//    formula (x - mean) / (sqrt(var) + 1e-6), which differs from ONNX BatchNormalization's
//    sqrt(var + eps): emitting BatchNormalization would change the numbers.
//  * leaky is LeakyRelu(0.1), mish is x * Tanh(Softplus(x)) and swish x * Sigmoid(x), ops the NPU
//    runs and the fusion passes know; maxpool gets darknet's asymmetric padding explicitly.
//  * [yolo] / [region] / [detection] add their input, the raw head tensor, to the graph outputs
//    (what RKNN does: decoding stays in post-processing); [dropout] and [cost] are identities; the
//    last layer other than [cost] is an output as in darknet's get_network_output().
#pragma once

#include <memory>
#include <string>

#include "frontend/darknet/layer_plan.h"
#include "frontend/darknet/weights_file.h"
#include "ir/graph.h"

namespace npuc::darknet {

// The weights file must hold exactly plan.total_params floats (checked by the caller).
std::unique_ptr<Graph> emitGraph(const NetPlan& plan, WeightsFile& weights, const std::string& name);

}  // namespace npuc::darknet
