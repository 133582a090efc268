// How the INT8 model computes each node: which integer kernel (or the FP16 fallback) it gets.
// The quantizer (which parameters a node's output takes) and the simulator (which kernel runs
// it) both decide from this one classification, so they cannot disagree.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace npuc::quant {

enum class QuantOpKind {
  NonFloat,          // no float input or output (shape arithmetic, indices): runs unchanged
  Conv,              // 2-D Conv with constant weights (and optional constant bias)
  Gemm,              // Gemm, alpha = beta = 1, transA = 0, constant B, optional constant C
  MatMulConst,       // MatMul with a constant 2-D B
  MatMulActivation,  // MatMul of two activations with equal batch dims
  Add,
  Mul,
  Concat,
  SharedScale,      // data movement and MaxPool: output keeps input 0's parameters, bytes move
  ClampActivation,  // Relu / Clip with constant bounds: keeps its input's parameters, clamps
  GlobalAveragePool,
  AveragePool,  // 2-D, explicit pads, floor mode
  Lut,          // Sigmoid, Tanh, SiLU, HardSwish, Gelu, Exp: a 256-entry table
  Float16,      // no int8 kernel: dequantize, compute in FP16, quantize
};

const char* quantOpKindName(QuantOpKind k);

// The kernel class of `node` in an INT8 model (shapes must be known).
QuantOpKind classifyForInt8(const Node& node);

// True when input `input` of an int8 node of class `kind` is read by its kernel as an int8
// activation; every other input is a weight, bias or parameter read as a float/int constant. A
// float constant at such an input gets its own int8 copy. The simulator (which operands it
// quantizes) and the QDQ export (which constants it wraps in Q/DQ) both use this one rule, so the
// exported model reads exactly what the simulator reads.
bool readsAsActivation(QuantOpKind kind, size_t input);

// The real bounds of a ClampActivation node: Relu [0, inf), Clip [min, max] from its constant
// inputs (an absent bound is infinite).
struct ClampBounds {
  float lo, hi;
};
ClampBounds clampBoundsOf(const Node& clamp);

// True for the kinds whose output takes its input's parameters instead of being calibrated.
inline bool keepsInputParams(QuantOpKind k) {
  return k == QuantOpKind::SharedScale || k == QuantOpKind::ClampActivation;
}

// True for kinds whose output, when it feeds only a Relu/Clip, is requantized straight to that
// activation's range (the activation is then a clamp in the same integer domain). A Concat
// qualifies because its kernel rescales every input into the output's grid with saturation: a
// Relu moved below a Concat (passes/) would otherwise leave the Concat on a grid spanning the
// negative values the Relu drops, about one bit coarser than the Relu's own range.
inline bool canFuseClamp(QuantOpKind k) {
  return k == QuantOpKind::Conv || k == QuantOpKind::Gemm || k == QuantOpKind::MatMulConst ||
         k == QuantOpKind::Add || k == QuantOpKind::Concat;
}

}  // namespace npuc::quant
