#include "quant/graph/quant_plan.h"

#include <fmt/format.h>

#include <iterator>

#include "common/error.h"

namespace npuc::quant {

const char* quantDTypeName(QuantDType t) {
  switch (t) {
    case QuantDType::Int8: return "int8";
    case QuantDType::Int32: return "int32";
    case QuantDType::Float16: return "float16";
    case QuantDType::Int16: return "int16";
    case QuantDType::Int4: return "int4";
    case QuantDType::Int64: return "int64";
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
    throw ConfigError(fmt::format(
        "quantization of '{}' is per channel (axis {}), a per-tensor scale was expected", what, axis));
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
  fmt::memory_buffer os;
  auto out = std::back_inserter(os);
  for (const auto& [name, p] : nodes) fmt::format_to(out, "node {}: {}\n", name, nodePrecisionName(p));
  for (const auto& [name, t] : tensors) {
    fmt::format_to(out, "value {}: {}", name, quantDTypeName(t.dtype));
    if (t.isPerTensor() && !t.scales.empty()) {
      // {:g} of the double: the scale as a default std::ostream printed it.
      fmt::format_to(out, " scale={:g} zp={}", static_cast<double>(t.scales[0]), t.zero_points[0]);
    } else {
      fmt::format_to(out, " axis={} channels={}", t.axis, t.scales.size());
    }
    fmt::format_to(out, "\n");
  }
  return fmt::to_string(os);
}

}  // namespace npuc::quant
