// The quantized model as standard ONNX "QDQ" (QuantizeLinear / DequantizeLinear around every
// quantized tensor), so ONNX Runtime or any QDQ-aware tool runs what the simulator runs:
//
//   activations   every int8 activation (graph inputs too) is followed by
//                 QuantizeLinear -> DequantizeLinear with its plan (scale, int8 zero point);
//   weights       int8 initializers + DequantizeLinear, per output channel with `axis`
//                 (opset 13) or per tensor, from the same quantizeNodeWeights the simulator uses;
//   biases        int32 initializers + DequantizeLinear at scale s_in * s_w[c];
//   constants     float constants an int8 Add/Mul/Concat reads become int8 + DequantizeLinear;
//   FP16 nodes    stay float; with emulate_fp16_rounding each float input and output passes
//                 through Cast(float16) -> Cast(float), the half rounding the simulator applies;
//   npuc ops      expanded to standard ops (standard_op_expansion.h); ConvAct is refused.
//
// Plans of the other quantized dtypes (docs/quantization.md "QDQ export of the dtypes"; opset 21,
// IR version 10, as soon as one int16 or int4 tensor is written; a w8a8 plan stays opset 13):
//   int16         activations and w16a16i weights: Q/DQ with int16 zero points;
//   int4          w4a16 weights: INT4 initializers + DequantizeLinear, grouped ones blocked
//                 (block_size along the reduction axis, block scale float(scales[c] * m)); a
//                 Conv whose groups do not cover whole kernel windows: the float weight instead;
//   int64 biases  the float32 of q * s_in * s_w[c] (DequantizeLinear reads no int64).
//
// The graph is written by the ordinary ONNX exporter (cpp/frontend/onnx_export.h).
#pragma once
#include <memory>
#include <string>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"

namespace npuc::quant {

struct QdqExportOptions {
  // The FP16 simulator's model (empty plan): every float node computes in half, nothing is
  // quantized.
  bool float16_model = false;
  // Cast the float inputs/outputs of FP16 nodes to float16 and back so ONNX Runtime rounds
  // them as the simulator does (costs two Cast nodes per tensor; off gives plain float nodes).
  bool emulate_fp16_rounding = true;
};

// The QDQ graph of `graph` quantized by `plan` (the graph given to buildQuantPlan, or the
// simulator's copy of it). Throws UnsupportedOpError naming a node that cannot be exported,
// ConfigError naming a value whose plan entry is inconsistent with its use.
std::unique_ptr<Graph> buildQdqGraph(const Graph& graph, const QuantPlan& plan,
                                     const QdqExportOptions& options = {});

// Serialized ONNX ModelProto of buildQdqGraph (passes onnx.checker with full_check).
std::string exportQdqOnnxBytes(const Graph& graph, const QuantPlan& plan,
                               const QdqExportOptions& options = {});
// Writes it to `path`; throws Error naming the path if it cannot be written.
void exportQdqOnnxFile(const Graph& graph, const QuantPlan& plan, const std::string& path,
                       const QdqExportOptions& options = {});

}  // namespace npuc::quant
