#include "opset/op_traits.h"

namespace npuc {

std::string opTraitNames(OpTrait traits) {
  static const std::pair<OpTrait, const char*> kNames[] = {
      {OpTrait::ElementwiseUnary, "ElementwiseUnary"},
      {OpTrait::ElementwiseBinary, "ElementwiseBinary"},
      {OpTrait::Commutative, "Commutative"},
      {OpTrait::DataMovement, "DataMovement"},
      {OpTrait::SizeChange, "SizeChange"},
      {OpTrait::WindowPooling, "WindowPooling"},
      {OpTrait::SlidingWindow, "SlidingWindow"},
      {OpTrait::Transcendental, "Transcendental"},
      {OpTrait::SlowActivation, "SlowActivation"},
      {OpTrait::FiniteUnary, "FiniteUnary"},
      {OpTrait::ChannelwiseBinary, "ChannelwiseBinary"},
      {OpTrait::HostFusableActivation, "HostFusableActivation"},
      {OpTrait::MacGeometry, "MacGeometry"},
      {OpTrait::WeightLinear, "WeightLinear"},
      {OpTrait::LearnedParameters, "LearnedParameters"},
      {OpTrait::ShapeOnly, "ShapeOnly"},
      {OpTrait::AxesReduction, "AxesReduction"},
      {OpTrait::UserDefined, "UserDefined"},
      {OpTrait::ReadsShapeOnly, "ReadsShapeOnly"},
  };
  std::string out;
  for (const auto& [flag, name] : kNames)
    if ((traits & flag) != OpTrait::None) out += (out.empty() ? "" : "|") + std::string(name);
  return out.empty() ? "None" : out;
}

const char* quantClassName(QuantClass c) {
  switch (c) {
    case QuantClass::Unset: return "unset";
    case QuantClass::Float: return "float";
    case QuantClass::DataMovement: return "data-movement";
    case QuantClass::SharedScale: return "shared-scale";
    case QuantClass::Lut: return "lut";
    case QuantClass::Clamp: return "clamp";
    case QuantClass::Mac: return "mac";
    case QuantClass::RequantBinary: return "requant-binary";
    case QuantClass::Concat: return "concat";
    case QuantClass::AveragePool: return "average-pool";
  }
  return "?";
}

}  // namespace npuc
