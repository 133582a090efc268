// Size and cost figures of a graph for `npuc info` and reports: node count, op histogram,
// multiply-accumulates of the compute-heavy ops and the parameter count.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "opset/macs.h"

namespace npuc {

struct ModelStats {
  size_t num_nodes = 0;
  // Op type (with its domain prefix for non-ONNX ops, as in dumps) -> node count.
  std::map<std::string, int64_t> op_histogram;
  // Multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul (and npuc's fused ConvAct), from
  // the static shapes. Other ops are cheap next to them and are not counted.
  int64_t macs = 0;
  // Elements of all floating-point constants (weights, biases, normalization parameters); integer
  // constants are shapes and indices, not parameters.
  int64_t params = 0;
  int64_t param_bytes = 0;
};

// Nodes whose shapes are not static contribute no MACs (the figure is then a lower bound).
ModelStats computeModelStats(const Graph& graph);

}  // namespace npuc
