#include "quant/graph/op_quant_class.h"

#include <limits>
#include <string>

#include "opset/op_traits.h"

namespace npuc::quant {

namespace {

bool isFloatValue(const Value* v) {
  return v && v->dtype() == DType::Float32;
}

bool isConstant(const Value* v) {
  return v && v->isConstant();
}

bool anyFloatIo(const Node& n) {
  for (const Value* v : n.inputs())
    if (isFloatValue(v) && !v->isConstant()) return true;
  for (const Value* v : n.outputs())
    if (isFloatValue(v)) return true;
  return false;
}

// The op-specific conditions under which a QuantClass::SharedScale op only copies elements.
bool sharedScaleHolds(const Node& n) {
  const std::string& op = n.opType();
  if (op == "MaxPool") return n.numOutputs() == 1 && n.attrs().i("ceil_mode", 0) == 0;
  if (op == "Resize") return n.attrs().s("mode", "nearest") == "nearest";
  if (op == "Pad") {
    // Constant padding with 0 pads with the zero point; other modes copy elements too.
    if (n.attrs().s("mode", "constant") != "constant") return true;
    const Value* pad = n.input(2);
    return !pad || (pad->isConstant() && pad->constant().numel() == 1 && pad->constant().doubleAt(0) == 0.0);
  }
  return false;
}

bool hasStaticRank(const Value* v, int64_t rank) {
  return v && v->hasShape() && v->rank() == rank;
}

QuantOpKind classifyMatMul(const Node& n) {
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (!a->hasShape() || a->rank() < 2) return QuantOpKind::Float16;
  if (isConstant(b)) return b->rank() == 2 ? QuantOpKind::MatMulConst : QuantOpKind::Float16;
  if (!b->hasShape() || b->rank() != a->rank()) return QuantOpKind::Float16;
  for (int64_t i = 0; i + 2 < a->rank(); ++i)
    if (a->shape()[static_cast<size_t>(i)] != b->shape()[static_cast<size_t>(i)]) return QuantOpKind::Float16;
  return QuantOpKind::MatMulActivation;
}

QuantOpKind classifyConv(const Node& n) {
  const bool bias_ok = !n.hasInput(2) || isConstant(n.input(2));
  return hasStaticRank(n.input(0), 4) && isConstant(n.input(1)) && bias_ok ? QuantOpKind::Conv
                                                                           : QuantOpKind::Float16;
}

QuantOpKind classifyGemm(const Node& n) {
  const Attributes& a = n.attrs();
  const bool simple = a.f("alpha", 1.0f) == 1.0f && a.f("beta", 1.0f) == 1.0f && a.i("transA", 0) == 0;
  const Value* c = n.input(2);
  const bool bias_ok = !c || (isConstant(c) && c->constant().numel() == n.output(0)->shape().back());
  return simple && isConstant(n.input(1)) && bias_ok && hasStaticRank(n.input(0), 2) ? QuantOpKind::Gemm
                                                                                     : QuantOpKind::Float16;
}

// QuantClass::Mac: which integer MAC kernel, if the node's operands allow one.
QuantOpKind classifyMac(const Node& n) {
  if (n.opType() == "Conv") return classifyConv(n);
  if (n.opType() == "Gemm") return classifyGemm(n);
  return classifyMatMul(n);
}

// QuantClass::Clamp: Relu always; Clip only with constant bounds.
QuantOpKind classifyClamp(const Node& n) {
  if (n.opType() == "Clip") {
    for (size_t i = 1; i < n.numInputs(); ++i)
      if (n.hasInput(i) && !isConstant(n.input(i))) return QuantOpKind::Float16;
  }
  return QuantOpKind::ClampActivation;
}

QuantOpKind classifyAveragePool(const Node& n) {
  if (n.opType() == "GlobalAveragePool") return QuantOpKind::GlobalAveragePool;
  const Attributes& a = n.attrs();
  const bool simple = a.i("ceil_mode", 0) == 0 && a.s("auto_pad", "NOTSET") == "NOTSET" &&
                      a.ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1};
  return simple && hasStaticRank(n.input(0), 4) ? QuantOpKind::AveragePool : QuantOpKind::Float16;
}

}  // namespace

const char* quantOpKindName(QuantOpKind k) {
  switch (k) {
    case QuantOpKind::NonFloat: return "non-float";
    case QuantOpKind::Conv: return "conv";
    case QuantOpKind::Gemm: return "gemm";
    case QuantOpKind::MatMulConst: return "matmul";
    case QuantOpKind::MatMulActivation: return "matmul(activations)";
    case QuantOpKind::Add: return "add";
    case QuantOpKind::Mul: return "mul";
    case QuantOpKind::Concat: return "concat";
    case QuantOpKind::SharedScale: return "shared-scale";
    case QuantOpKind::ClampActivation: return "clamp";
    case QuantOpKind::GlobalAveragePool: return "global-average-pool";
    case QuantOpKind::AveragePool: return "average-pool";
    case QuantOpKind::Lut: return "lut";
    case QuantOpKind::Float16: return "fp16";
  }
  return "?";
}

QuantOpKind classifyForInt8(const Node& n) {
  if (!anyFloatIo(n)) return QuantOpKind::NonFloat;
  for (const Value* v : n.outputs())
    if (v && v->dtype() != DType::Float32) return QuantOpKind::Float16;
  switch (opTraits(n).quant_class) {
    case QuantClass::Lut: return QuantOpKind::Lut;
    case QuantClass::DataMovement:
      return isFloatValue(n.input(0)) ? QuantOpKind::SharedScale : QuantOpKind::Float16;
    case QuantClass::SharedScale:
      return sharedScaleHolds(n) ? QuantOpKind::SharedScale : QuantOpKind::Float16;
    case QuantClass::Mac: return classifyMac(n);
    case QuantClass::RequantBinary: return n.opType() == "Add" ? QuantOpKind::Add : QuantOpKind::Mul;
    case QuantClass::Concat: return QuantOpKind::Concat;
    case QuantClass::Clamp: return classifyClamp(n);
    case QuantClass::AveragePool: return classifyAveragePool(n);
    case QuantClass::Unset:
    case QuantClass::Float: return QuantOpKind::Float16;
  }
  return QuantOpKind::Float16;
}

bool readsAsActivation(QuantOpKind kind, size_t input) {
  switch (kind) {
    case QuantOpKind::Add:
    case QuantOpKind::Mul:
    case QuantOpKind::Concat:
    case QuantOpKind::MatMulActivation: return true;  // every operand is an activation
    case QuantOpKind::NonFloat:
    case QuantOpKind::Float16: return false;  // no int8 kernel reads anything
    default: return input == 0;               // input 0 is the data; the rest are weights / params
  }
}

ClampBounds clampBoundsOf(const Node& clamp) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (clamp.opType() != "Clip") return {0.0f, kInf};
  return {clamp.hasInput(1) ? static_cast<float>(clamp.input(1)->constant().doubleAt(0)) : -kInf,
          clamp.hasInput(2) ? static_cast<float>(clamp.input(2)->constant().doubleAt(0)) : kInf};
}

}  // namespace npuc::quant
