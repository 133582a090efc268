// Facts about an op type, set once at the op's registration (opset/ops/*.cpp) and read by the
// passes, the partitioner, the quantizer and the cost model. Before these existed each of those
// kept its own list of op-type names for the same fact, and the lists drifted apart (Exp was
// "runs in float" for the cost model while the quantizer gave it an int8 table). A fact now has
// one home: the op's registration, next to its shape inference and kernel.
//
// A trait is a claim: an op without it is treated as "not known to have it". Traits that gate a
// rewrite (FiniteUnary, ChannelwiseBinary, ...) are set only on the ops the rewrite was checked for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc {

class Node;

enum class OpTrait : uint32_t {
  None = 0,
  // y[i] = f(x[i]) on numbers; further inputs (Clip's bounds) are scalar parameters.
  ElementwiseUnary = 1u << 0,
  // y = f(a, b) element by element with numpy broadcasting (Max/Min also take more inputs).
  ElementwiseBinary = 1u << 1,
  // Operand order does not matter, so matchers try both orders and canonicalization may sort.
  Commutative = 1u << 2,
  // Output elements are copies of input elements: only the layout changes, never a value.
  DataMovement = 1u << 3,
  // Changes the spatial size of its input (resizing, tiling, padding, pooling).
  SizeChange = 1u << 4,
  // Pooling whose work is the output elements times the window (MaxPool, AveragePool).
  WindowPooling = 1u << 5,
  // Has a kernel/stride/pad window geometry the NPU limits (Conv, ConvTranspose, pooling).
  SlidingWindow = 1u << 6,
  // Costly per element on a CPU (a transcendental function or similar).
  Transcendental = 1u << 7,
  // An activation the NPU runs at low efficiency, unlike the Relu family's clamps.
  SlowActivation = 1u << 8,
  // Unary op that maps finite inputs to finite outputs (align_channels may pad with zeros).
  FiniteUnary = 1u << 9,
  // Binary op that works channel by channel, so a constant operand can be padded per channel.
  ChannelwiseBinary = 1u << 10,
  // Activation the host runtime fuses into a preceding Conv (oneDNN post-op).
  HostFusableActivation = 1u << 11,
  // Dense multiply-accumulates the cost model describes with Conv or Gemm geometry
  // (perf/mac_shape.cpp: Conv, Gemm, MatMul). ConvTranspose multiplies and accumulates too, but
  // scatters each input into a window of outputs, which neither geometry expresses; it has no flag
  // and the cost model counts its MACs on their own.
  MacGeometry = 1u << 12,
  // Linear in its weights (input 1), one weight slice per output channel, plus an optional bias
  // (input 2): a per-channel scale and shift after it fold into the weights and bias
  // (fold_batchnorm: Conv, ConvTranspose, Gemm, MatMul).
  WeightLinear = 1u << 13,
  // Its constant operands are learned parameters (weights, biases, normalization statistics): an
  // Inf there is a broken export, not a mask (frontend/weight_value_check.cpp).
  LearnedParameters = 1u << 14,
  // Output is input 0's elements in the same order under another shape, which depends on the input
  // shape alone (Reshape, Flatten, Squeeze, Unsqueeze): a chain of them is one Reshape.
  ShapeOnly = 1u << 15,
  // Reduces input 0 over the axes of its optional int64 input 1 (ONNX Reduce*, opset 18 form):
  // no axes means all, or none with noop_with_empty_axes=1.
  AxesReduction = 1u << 16,
  // A user-registered op (reg_custom_op, opset/custom_ops.h): code npuc cannot see into, so it runs
  // on the CPU and is never folded or merged.
  UserDefined = 1u << 17,
  // Output 0 depends on input 0's type and shape only, never on its elements (Shape, Size,
  // EyeLike): constant folding evaluates it whenever that shape is static.
  ReadsShapeOnly = 1u << 18,
};

constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr OpTrait operator&(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}

// "ElementwiseUnary|Transcendental"; "None" for no flag. For diagnostics and matcher messages.
std::string opTraitNames(OpTrait traits);

// How an INT8 model computes an op (quant/graph/op_quant_class.cpp turns this and the node's
// attributes into the kernel class). Every registered op sets one; Unset means it was forgotten.
enum class QuantClass : uint8_t {
  Unset,
  Float,          // no int8 kernel: dequantized and computed in FP16
  DataMovement,   // moves bytes: the output keeps input 0's parameters
  SharedScale,    // MaxPool / nearest Resize / zero Pad: copies elements when the node allows it
  Lut,            // a 256-entry table
  Clamp,          // Relu / Clip: keeps its input's parameters and clamps
  Mac,            // Conv / Gemm / MatMul: integer MACs, then requantize
  RequantBinary,  // Add / Mul: rescales both operands into the output grid
  Concat,         // rescales every input into the output grid
  AveragePool,    // integer sums of a window, then requantize
};

const char* quantClassName(QuantClass c);

struct OpTraits {
  OpTrait flags = OpTrait::None;
  QuantClass quant_class = QuantClass::Unset;
  // Why no SoC's NPU runs this op, decided once at registration (SchemaBuilder::cpuOnly): the
  // partitioner reports it, a SoC profile may not list the op, and docs/supported_ops.md prints it.
  // Empty: each SoC profile decides by listing the op or not.
  std::string cpu_reason;

  // True if every flag in `t` is set.
  bool has(OpTrait t) const { return (flags & t) == t && t != OpTrait::None; }
  // True if any flag in `t` is set.
  bool hasAny(OpTrait t) const { return (flags & t) != OpTrait::None; }
  bool elementwise() const { return hasAny(OpTrait::ElementwiseUnary | OpTrait::ElementwiseBinary); }
  // DESIGN.md's low-efficiency classes on the NPU: data movement, size change and the
  // non-Relu activations.
  bool lowEfficiencyOnNpu() const {
    return hasAny(OpTrait::DataMovement | OpTrait::SizeChange | OpTrait::SlowActivation);
  }
  // Kept in float (FP16 on the NPU) when the model is quantized to int8.
  bool runsInFloat() const { return quant_class == QuantClass::Float; }
};

// The traits of a node's op; empty traits for an op the registry does not know.
const OpTraits& opTraits(const Node& node);
const OpTraits& opTraits(const std::string& op_type, const std::string& domain);
// For callers that only have an op-type name (the cost model, op-type keyed options): the ONNX
// op of that name, else npuc's own op of that name, else empty traits.
const OpTraits& opTraitsOfType(const std::string& op_type);

// The op-type names of the registered ops that have every flag in `traits`, in registration order:
// for op-type keyed tables such as a rewrite pattern's root ops or a target limit's op list.
std::vector<std::string> opTypesWith(OpTrait traits);

}  // namespace npuc
