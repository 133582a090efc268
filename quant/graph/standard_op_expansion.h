// Rewrites ops that ONNX Runtime cannot load from an opset-13..17 file back into chains of
// standard ONNX ops: npuc's own fusions (ai.npuc Gelu, SiLU, GLU, RMSNorm) and the ONNX ops
// newer than opset 17 that the optimizer emits (Gelu from opset 20, Mish from opset 18).
// The QDQ export runs it last, so the expanded chain sits between the node's DequantizeLinear
// inputs and QuantizeLinear outputs and computes in float, as one int8 (LUT) or FP16 node does.
#pragma once
#include "ir/graph.h"

namespace npuc::quant {

// Expands every such node in place; the final value of each chain takes the node's output name,
// so graph outputs keep their names. Other nodes are left alone. Throws UnsupportedOpError naming
// the node for an ai.npuc op without a standard form (ConvAct, a host-only fusion, or an unknown
// op), before modifying anything.
void expandToStandardOps(Graph& graph);

}  // namespace npuc::quant
