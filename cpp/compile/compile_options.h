// The typed options of one compile: what Toolkit.config / build decided, crossing pybind11 as this
// struct (no strings to re-parse). The blob records them in its META section through one codec
// (compile/options_codec.h); a loaded blob gives them back typed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quant/quant_scheme.h"
#include "target/partition.h"

namespace npuc {

// RKNN's quantized_dtype values (quant/quant_scheme.h: "asymmetric_quantized-8" and "int8" name w8a8).
using QuantDType = quant::SchemeDType;
enum class QuantAlgorithm : uint8_t { Normal, KlDivergence, Mmse, Percentile };
// Weight scales per output channel, per tensor, or (w4a16 only) per group of 32..256 elements of the
// reduction axis within each output channel.
enum class QuantMethod : uint8_t { Channel, Layer, Group32, Group64, Group128, Group256 };

const char* quantDTypeName(QuantDType t);          // "w8a8"
const char* quantAlgorithmName(QuantAlgorithm a);  // "normal", "kl_divergence", "mmse", "percentile"
const char* quantMethodName(QuantMethod m);        // "channel", "layer", "group32", ...
// The weight group size of a group method (32 .. 256), 0 for channel / layer.
int64_t quantMethodGroup(QuantMethod m);
std::optional<QuantDType> quantDTypeFromName(const std::string& name);  // RKNN aliases accepted
std::optional<QuantAlgorithm> quantAlgorithmFromName(const std::string& name);
std::optional<QuantMethod> quantMethodFromName(const std::string& name);

// The order the nodes run in (memory/memory_aware_order.h). MemoryAware (the default): the
// topological order with the smallest activation arena bound, never worse than the exporter's.
// Exporter: the graph's order as imported and optimized, for comparing against it (the blob's META
// records it only when it is not the default, so default builds' blobs do not change).
enum class NodeOrder : uint8_t { MemoryAware, Exporter };
const char* nodeOrderName(NodeOrder o);  // "memory_aware" / "exporter"
std::optional<NodeOrder> nodeOrderFromName(const std::string& name);

struct CompileOptions {
  int optimization_level = 3;  // 0-3, as config(optimization_level)
  bool quantized = true;       // false: a float build, which the NPU runs in FP16
  // Meaningful when quantized.
  QuantDType quantized_dtype = QuantDType::W8A8;
  QuantAlgorithm quantized_algorithm = QuantAlgorithm::Normal;
  QuantMethod quantized_method = QuantMethod::Channel;
  // Every task on one NPU core (RKNN's default core mask) instead of spread over all.
  bool single_core_mode = false;
  NodeOrder node_order = NodeOrder::MemoryAware;
  // Concats planned in place where that never makes the arena or a core count's time worse
  // (memory/concat_in_place.h); false: every Concat copies (for comparison; META records it only
  // then).
  bool concat_in_place = true;
  std::string custom_string;                     // recorded verbatim (RKNN's custom_string)
  std::vector<std::string> disable_passes;       // as given to the optimizer
  std::vector<std::string> hybrid_layers;        // layers kept in FP16 by the user
  OpTargetMap op_target;                         // node name -> "npu" / "cpu"
  std::vector<std::vector<double>> mean_values;  // per input, per channel (empty: none)
  std::vector<std::vector<double>> std_values;

  bool operator==(const CompileOptions& o) const;
  bool operator!=(const CompileOptions& o) const { return !(*this == o); }
};

// The numeric scheme of a quantized build (ConfigError for a group method without w4a16 or w4a16
// without one).
quant::QuantScheme quantSchemeOf(const CompileOptions& o);

}  // namespace npuc
