// The numeric scheme of a quantized build: RKNN-Toolkit2 2.3.2's `quantized_dtype` values
// (w8a8, w8a16, w16a16i, w16a16i_dfp, w4a16) and, for w4a16, the weight group size of
// `quantized_method='group32' .. 'group256'`. Decided once from the config; the quantizer, the
// simulator, the lowering, the QDQ export and the reports read it from QuantPlan::scheme.
// The formats are docs/quantization.md section "Quantized dtypes".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace npuc::quant {

// RKNN's quantized_dtype values ("asymmetric_quantized-8" and "int8" are spellings of w8a8).
enum class SchemeDType : uint8_t { W8A8, W8A16, W16A16I, W16A16IDfp, W4A16 };

const char* schemeDTypeName(SchemeDType t);  // canonical: "w8a8", "w8a16", "w16a16i", ...
std::optional<SchemeDType> schemeDTypeFromName(const std::string& name);  // aliases accepted

struct QuantScheme {
  SchemeDType dtype = SchemeDType::W8A8;
  int activation_bits = 8;  // 8 or 16: activations are int8 or int16 per tensor
  int weight_bits = 8;      // 4, 8 or 16: symmetric weights in [-(2^(b-1) - 1), 2^(b-1) - 1]
  // Grouped weights (w4a16): elements of the reduction axis that share one weight scale per output
  // channel; 0 = one scale per channel (or per tensor with quantized_method='layer').
  int64_t weight_group = 0;
  // w16a16i_dfp: every scale is a power of two and every zero point 0 (dynamic fixed point).
  bool power_of_two_scales = false;

  // The scheme of `dtype`; `weight_group` is required (32/64/128/256) for w4a16 and must be 0
  // otherwise (ConfigError naming the values otherwise).
  static QuantScheme of(SchemeDType dtype, int64_t weight_group = 0);

  int32_t activationMin() const { return activation_bits == 8 ? -128 : -32768; }
  int32_t activationMax() const { return activation_bits == 8 ? 127 : 32767; }
  int32_t weightMax() const { return (1 << (weight_bits - 1)) - 1; }  // 7, 127, 32767
  // True when an int32 accumulator could overflow: every scheme but w8a8 accumulates in int64.
  bool wideAccumulator() const { return activation_bits > 8 || weight_bits > 8; }
  bool operator==(const QuantScheme& o) const { return dtype == o.dtype && weight_group == o.weight_group; }
  bool operator!=(const QuantScheme& o) const { return !(*this == o); }
};

// "w8a8", or "w4a16 group128".
std::string describeScheme(const QuantScheme& s);

}  // namespace npuc::quant
