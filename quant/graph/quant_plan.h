// The side table that turns an FP32 IR graph into an INT8 (or mixed INT8/FP16) model without
// touching the IR: quantization parameters per value name and a precision per node name. The
// simulator (quant/sim) and, later, the blob writer read the graph together with this plan.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "quant/qparams.h"
#include "quant/quant_scheme.h"
#include "quant/weight_outliers.h"
#include "quant/weight_quant.h"

namespace npuc::quant {

// Appended only: the blob's QUNT section stores the code. Int4 values are held one per int8 in the
// simulator and packed two per byte in the blob; Int64 is the bias of the wide-accumulator schemes.
enum class QuantDType { Int8, Int32, Float16, Int16, Int4, Int64 };
const char* quantDTypeName(QuantDType t);

// How one value is stored: real = scale[c] * (q - zero_point[c]) for channel c along `axis`
// (axis -1: per tensor, one entry each).
struct TensorQuant {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  int64_t axis = -1;
  QuantDType dtype = QuantDType::Int8;
  // Grouped weights (w4a16): the reduction axis of each output channel is cut into groups of
  // `group_size` elements (the last may be shorter); channel c, group g has the scale
  // scales[c] * group_multipliers[c * groups + g], the multipliers being integers in [1, 255], so
  // that a channel's accumulation stays integer (sum over groups of multiplier * group sum) and
  // one requantization per channel follows. 0 and empty: not grouped.
  int64_t group_size = 0;
  std::vector<int32_t> group_multipliers;
  // The integers of a constant an imported QDQ file fixed (biases, one per output channel): used
  // as they are instead of quantizing the float constant, which cannot hold integers beyond 2^24
  // exactly. Empty otherwise.
  std::vector<int64_t> given_values;

  static TensorQuant perTensor(QuantParams p);
  bool isPerTensor() const { return axis < 0; }
  // The per-tensor parameters; throws ConfigError naming `what` for a per-channel entry.
  QuantParams params(const std::string& what = "tensor") const;
};

enum class NodePrecision { Int8, Float16 };
const char* nodePrecisionName(NodePrecision p);

struct QuantPlan {
  // The numeric scheme (quantized_dtype, weight groups) the plan was built for.
  QuantScheme scheme;
  // Activations (per tensor) and constant weights (per channel) by value name. Values absent
  // from the table are not quantized: shape tensors, indices, anything non-float.
  std::map<std::string, TensorQuant> tensors;
  // Every node computing on float data, by node name.
  std::map<std::string, NodePrecision> nodes;
  WeightGranularity weight_granularity = WeightGranularity::PerChannel;
  // Weight outlier rows (all measured tensors) and human-readable warnings (flagged outliers,
  // saturated biases, forced FP16 nodes).
  std::vector<WeightOutlierRow> weight_outliers;
  std::vector<std::string> warnings;

  bool has(const std::string& value) const { return tensors.count(value) != 0; }
  // Throws ConfigError naming the value when absent.
  const TensorQuant& at(const std::string& value) const;
  NodePrecision precisionOf(const std::string& node) const;
  // One line per node and per quantized value, for logs and tests.
  std::string summary() const;
};

}  // namespace npuc::quant
