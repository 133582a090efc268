#include "perf/op_classes.h"

#include <set>

namespace npuc::perf {

bool isLowEfficiencyOp(const std::string& op_type) {
  static const std::set<std::string> kOps = {
      // data movement
      "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Split", "Concat", "Slice", "Gather",
      "DepthToSpace", "SpaceToDepth",
      // size change
      "Resize", "Tile", "Pad", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      // non-Relu activations
      "Sigmoid", "Tanh", "Softplus", "HardSwish", "HardSigmoid", "Elu", "SiLU", "Gelu", "Exp", "Log"};
  return kOps.count(op_type) > 0;
}

bool runsInFloat(const std::string& op_type) {
  static const std::set<std::string> kOps = {
      "Softmax", "LayerNormalization", "InstanceNormalization", "Exp", "Log", "Sqrt", "Pow", "Div", "Gelu"};
  return kOps.count(op_type) > 0;
}

bool isTranscendental(const std::string& op_type) {
  static const std::set<std::string> kOps = {"Exp",      "Log",        "Sigmoid", "Tanh",     "Softmax",
                                             "Softplus", "Gelu",       "Erf",     "SiLU",     "Elu",
                                             "Pow",      "LogSoftmax", "Sqrt",    "HardSwish"};
  return kOps.count(op_type) > 0;
}

bool isWindowPooling(const std::string& op_type) {
  return op_type == "MaxPool" || op_type == "AveragePool";
}

}  // namespace npuc::perf
