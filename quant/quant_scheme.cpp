#include "quant/quant_scheme.h"

#include <fmt/format.h>

#include <utility>

#include "common/error.h"

namespace npuc::quant {

namespace {

// Every accepted spelling; the first of each value is its canonical name.
const std::pair<const char*, SchemeDType> kNames[] = {
    {"w8a8", SchemeDType::W8A8},       {"asymmetric_quantized-8", SchemeDType::W8A8},
    {"int8", SchemeDType::W8A8},       {"w8a16", SchemeDType::W8A16},
    {"w16a16i", SchemeDType::W16A16I}, {"w16a16i_dfp", SchemeDType::W16A16IDfp},
    {"w4a16", SchemeDType::W4A16}};

}  // namespace

const char* schemeDTypeName(SchemeDType t) {
  for (const auto& [text, v] : kNames)
    if (v == t) return text;
  return "?";
}

std::optional<SchemeDType> schemeDTypeFromName(const std::string& name) {
  for (const auto& [text, v] : kNames)
    if (name == text) return v;
  return std::nullopt;
}

QuantScheme QuantScheme::of(SchemeDType dtype, int64_t weight_group) {
  QuantScheme s;
  s.dtype = dtype;
  switch (dtype) {
    case SchemeDType::W8A8: break;
    case SchemeDType::W8A16: s.activation_bits = 16; break;
    case SchemeDType::W16A16I:
      s.activation_bits = 16;
      s.weight_bits = 16;
      break;
    case SchemeDType::W16A16IDfp:
      s.activation_bits = 16;
      s.weight_bits = 16;
      s.power_of_two_scales = true;
      break;
    case SchemeDType::W4A16:
      s.activation_bits = 16;
      s.weight_bits = 4;
      break;
  }
  const bool grouped = dtype == SchemeDType::W4A16;
  const bool valid_group =
      weight_group == 32 || weight_group == 64 || weight_group == 128 || weight_group == 256;
  if (grouped && !valid_group) {
    throw ConfigError(
        fmt::format("quantized_dtype w4a16 needs quantized_method group32, group64, group128 or "
                    "group256 (got a group of {})",
                    weight_group));
  }
  if (!grouped && weight_group != 0) {
    throw ConfigError(fmt::format("quantized_method group{} applies to quantized_dtype w4a16 only, not {}",
                                  weight_group, schemeDTypeName(dtype)));
  }
  s.weight_group = weight_group;
  return s;
}

std::string describeScheme(const QuantScheme& s) {
  std::string text = schemeDTypeName(s.dtype);
  if (s.weight_group > 0) text += fmt::format(" group{}", s.weight_group);
  return text;
}

}  // namespace npuc::quant
