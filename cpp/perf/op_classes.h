// The op classes the cost model treats differently, per DESIGN.md's NPU notes. Each reads the
// op's traits (opset/op_traits.h), so the cost model and the quantizer cannot disagree.
#pragma once

#include <string>

namespace npuc::perf {

// DESIGN.md's low-efficiency classes: data movement (Transpose, Reshape, Split, Concat, ...), size
// change (Resize, Tile, Pooling, Pad) and non-Relu activations (Sigmoid, Tanh, Softplus, HardSwish, ...).
bool isLowEfficiencyOp(const std::string& op_type);
// Ops that keep float precision when the model runs in int8: those the quantizer gives no int8
// kernel (QuantClass::Float: normalizations, Softmax, Log, Div, ...). The NPU runs them in its
// 16-bit format, as RKNN does for non-quantizable ops.
bool runsInFloat(const std::string& op_type);
// Ops whose per-element CPU cost is a transcendental function.
bool isTranscendental(const std::string& op_type);
// Pooling ops whose work is the output elements times the window.
bool isWindowPooling(const std::string& op_type);

// How the NPU's vector unit pays for a non-MAC op (docs/perf_model.md, CostConstants).
enum class StreamClass {
  Elementwise,   // Add, Mul, Relu, Clip, ReduceSum, ...: one vector per cycle
  DataMovement,  // Concat, Split, Slice, Reshape, Resize, Pad, Tile (DataMovement/SizeChange)
  Pool,          // MaxPool, AveragePool: one elementwise max/add per window tap
  Transpose,     // moves elements across the channel vector
  Lut,           // non-Relu activations (SlowActivation: Sigmoid, SiLU, Tanh, HardSwish, Gelu, ...)
  Normalize,     // multi-pass over the tensor: Softmax, LogSoftmax, LayerNorm, InstanceNorm
};
StreamClass streamClass(const std::string& op_type);

}  // namespace npuc::perf
