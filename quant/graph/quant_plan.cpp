#include "quant/graph/quant_plan.h"

#include <sstream>

#include "common/error.h"

namespace npuc::quant {

const char* quantDTypeName(QuantDType t) {
  switch (t) {
    case QuantDType::Int8: return "int8";
    case QuantDType::Int32: return "int32";
    case QuantDType::Float16: return "float16";
  }
  return "?";
}

const char* nodePrecisionName(NodePrecision p) {
  return p == NodePrecision::Int8 ? "int8" : "fp16";
}

TensorQuant TensorQuant::perTensor(QuantParams p) {
  TensorQuant t;
  t.scales = {p.scale};
  t.zero_points = {p.zero_point};
  return t;
}

QuantParams TensorQuant::params(const std::string& what) const {
  if (!isPerTensor() || scales.size() != 1 || zero_points.size() != 1) {
    throw ConfigError("quantization of '" + what + "' is per channel (axis " + std::to_string(axis) +
                      "), a per-tensor scale was expected");
  }
  return QuantParams{scales[0], zero_points[0]};
}

const TensorQuant& QuantPlan::at(const std::string& value) const {
  auto it = tensors.find(value);
  if (it == tensors.end()) throw ConfigError("quantization plan has no parameters for value '" + value + "'");
  return it->second;
}

NodePrecision QuantPlan::precisionOf(const std::string& node) const {
  auto it = nodes.find(node);
  return it == nodes.end() ? NodePrecision::Float16 : it->second;
}

std::string QuantPlan::summary() const {
  std::ostringstream os;
  for (const auto& [name, p] : nodes) os << "node " << name << ": " << nodePrecisionName(p) << "\n";
  for (const auto& [name, t] : tensors) {
    os << "value " << name << ": " << quantDTypeName(t.dtype);
    if (t.isPerTensor() && !t.scales.empty()) {
      os << " scale=" << t.scales[0] << " zp=" << t.zero_points[0];
    } else {
      os << " axis=" << t.axis << " channels=" << t.scales.size();
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace npuc::quant
