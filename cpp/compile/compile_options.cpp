#include "compile/compile_options.h"

#include <utility>

namespace npuc {

namespace {

template <typename E, size_t N>
std::optional<E> fromName(const std::pair<const char*, E> (&table)[N], const std::string& name) {
  for (const auto& [text, value] : table)
    if (name == text) return value;
  return std::nullopt;
}

// Every accepted spelling; the first of each value is its canonical name.
const std::pair<const char*, QuantAlgorithm> kAlgorithms[] = {{"normal", QuantAlgorithm::Normal},
                                                              {"kl_divergence", QuantAlgorithm::KlDivergence},
                                                              {"mmse", QuantAlgorithm::Mmse},
                                                              {"percentile", QuantAlgorithm::Percentile}};
const std::pair<const char*, QuantMethod> kMethods[] = {
    {"channel", QuantMethod::Channel},   {"layer", QuantMethod::Layer},
    {"group32", QuantMethod::Group32},   {"group64", QuantMethod::Group64},
    {"group128", QuantMethod::Group128}, {"group256", QuantMethod::Group256}};

template <typename E, size_t N>
const char* nameOf(const std::pair<const char*, E> (&table)[N], E value) {
  for (const auto& [text, v] : table)
    if (v == value) return text;
  return "?";
}

}  // namespace

const char* quantDTypeName(QuantDType t) {
  return quant::schemeDTypeName(t);
}
const char* quantAlgorithmName(QuantAlgorithm a) {
  return nameOf(kAlgorithms, a);
}
const char* quantMethodName(QuantMethod m) {
  return nameOf(kMethods, m);
}
std::optional<QuantDType> quantDTypeFromName(const std::string& name) {
  return quant::schemeDTypeFromName(name);
}
std::optional<QuantAlgorithm> quantAlgorithmFromName(const std::string& name) {
  return fromName(kAlgorithms, name);
}
std::optional<QuantMethod> quantMethodFromName(const std::string& name) {
  return fromName(kMethods, name);
}

int64_t quantMethodGroup(QuantMethod m) {
  switch (m) {
    case QuantMethod::Group32: return 32;
    case QuantMethod::Group64: return 64;
    case QuantMethod::Group128: return 128;
    case QuantMethod::Group256: return 256;
    case QuantMethod::Channel:
    case QuantMethod::Layer: return 0;
  }
  return 0;
}

quant::QuantScheme quantSchemeOf(const CompileOptions& o) {
  return quant::QuantScheme::of(o.quantized_dtype, quantMethodGroup(o.quantized_method));
}

const char* nodeOrderName(NodeOrder o) {
  return o == NodeOrder::Exporter ? "exporter" : "memory_aware";
}

std::optional<NodeOrder> nodeOrderFromName(const std::string& name) {
  if (name == "memory_aware") return NodeOrder::MemoryAware;
  if (name == "exporter") return NodeOrder::Exporter;
  return std::nullopt;
}

bool CompileOptions::operator==(const CompileOptions& o) const {
  return optimization_level == o.optimization_level && quantized == o.quantized &&
         quantized_dtype == o.quantized_dtype && quantized_algorithm == o.quantized_algorithm &&
         quantized_method == o.quantized_method && single_core_mode == o.single_core_mode &&
         node_order == o.node_order && concat_in_place == o.concat_in_place &&
         custom_string == o.custom_string && disable_passes == o.disable_passes &&
         hybrid_layers == o.hybrid_layers && op_target == o.op_target && mean_values == o.mean_values &&
         std_values == o.std_values;
}

}  // namespace npuc
