// Arithmetic and activations: ADD/SUB/MUL/DIV (with their fused activation), MAXIMUM/MINIMUM,
// LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH, ELU, EXP, ..., LEAKY_RELU, PRELU.
// A 4-D result is computed in NCHW: lower-rank operands are padded to 4-D NHWC and permuted so
// they broadcast the way they did against the NHWC tensor.
#include "common/error.h"
#include "frontend/tflite/tflite_ops.h"

namespace npuc::tflite {

namespace {

// A binary op on operands 0 and 1: in NCHW when the result is 4-D, in the file's layout otherwise.
Value* binary(Builder& b, const std::string& op_type, bool* nchw) {
  b.expectArity(2, 2, 1);
  *nchw = b.outputShape(0).size() == 4;
  Value* x = *nchw ? b.inputBroadcastNchw(0) : b.inputFile(0);
  Value* y = *nchw ? b.inputBroadcastNchw(1) : b.inputFile(1);
  return b.node(op_type, {x, y})->output();
}

template <typename Options>
void binaryWithActivation(Builder& b, const std::string& op_type, const Options* o) {
  bool nchw = false;
  Value* y = binary(b, op_type, &nchw);
  b.setOutput(0, b.fusedActivation(y, o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE), nchw);
}

}  // namespace

void convertAdd(Builder& b) { binaryWithActivation(b, "Add", b.op().builtin_options_as_AddOptions()); }
void convertSub(Builder& b) { binaryWithActivation(b, "Sub", b.op().builtin_options_as_SubOptions()); }
void convertMul(Builder& b) { binaryWithActivation(b, "Mul", b.op().builtin_options_as_MulOptions()); }
void convertDiv(Builder& b) { binaryWithActivation(b, "Div", b.op().builtin_options_as_DivOptions()); }

void convertMaximum(Builder& b) {
  bool nchw = false;
  Value* y = binary(b, "Max", &nchw);
  b.setOutput(0, y, nchw);
}

void convertMinimum(Builder& b) {
  bool nchw = false;
  Value* y = binary(b, "Min", &nchw);
  b.setOutput(0, y, nchw);
}

void convertUnary(Builder& b) {
  b.expectArity(1, 1, 1);
  const int32_t code = b.file().builtinCode(b.op(), 0);
  Value* x = b.input(0);
  const bool nchw = b.inputIsNchw(0);
  auto clip = [&](float lo, float hi) {
    return b.node("Clip", {x, b.constant(Tensor::scalar(lo), "min"), b.constant(Tensor::scalar(hi), "max")})->output();
  };
  Value* y = nullptr;
  switch (code) {
    case fb::BuiltinOperator_LOGISTIC: y = b.node("Sigmoid", {x})->output(); break;
    case fb::BuiltinOperator_TANH: y = b.node("Tanh", {x})->output(); break;
    case fb::BuiltinOperator_RELU: y = b.node("Relu", {x})->output(); break;
    case fb::BuiltinOperator_RELU6: y = clip(0.f, 6.f); break;
    case fb::BuiltinOperator_RELU_N1_TO_1: y = clip(-1.f, 1.f); break;
    case fb::BuiltinOperator_RELU_0_TO_1: y = clip(0.f, 1.f); break;
    case fb::BuiltinOperator_HARD_SWISH: y = b.node("HardSwish", {x})->output(); break;  // x * relu6(x + 3) / 6
    case fb::BuiltinOperator_ELU: y = b.node("Elu", {x})->output(); break;
    case fb::BuiltinOperator_EXP: y = b.node("Exp", {x})->output(); break;
    case fb::BuiltinOperator_ABS: y = b.node("Abs", {x})->output(); break;
    case fb::BuiltinOperator_NEG: y = b.node("Neg", {x})->output(); break;
    case fb::BuiltinOperator_SQRT: y = b.node("Sqrt", {x})->output(); break;
    case fb::BuiltinOperator_RSQRT: y = b.node("Reciprocal", {b.node("Sqrt", {x}, "sqrt")->output()})->output(); break;
    case fb::BuiltinOperator_LOG: y = b.node("Log", {x})->output(); break;
    case fb::BuiltinOperator_FLOOR: y = b.node("Floor", {x})->output(); break;
    case fb::BuiltinOperator_SQUARE: y = b.node("Mul", {x, x})->output(); break;
    default: b.unsupported("no unary conversion for this op");
  }
  b.setOutput(0, y, nchw);
}

void convertLeakyRelu(Builder& b) {
  b.expectArity(1, 1, 1);
  const auto* o = b.op().builtin_options_as_LeakyReluOptions();
  Node* n = b.node("LeakyRelu", {b.input(0)});
  n->attrs().set("alpha", o ? o->alpha() : 0.2f);  // TF's default alpha when the options are absent
  b.setOutput(0, n->output(), b.inputIsNchw(0));
}

void convertPrelu(Builder& b) {
  bool nchw = false;
  Value* y = binary(b, "PRelu", &nchw);
  b.setOutput(0, y, nchw);
}

}  // namespace npuc::tflite
