// Import of already-quantized ONNX models (QDQ / QAT exports, ONNX Runtime static quantization,
// npuc's own export_onnx): the QuantizeLinear / DequantizeLinear nodes are stripped into a float
// graph plus the parameters they carried, by value name, for buildQuantPlan's `given` map
// (docs/qdq_import.md).
//
//   X -> Q(s, z) -> DQ(s, z) -> ...      X keeps its name; given[X] = (s, z) per tensor
//   int8/uint8 C -> DQ(s, z, axis)       a float constant (C - z) * s; given = (s, z, axis) Int8
//   int32 B -> DQ(s)                     a float constant B * s; given = (s, 0) Int32 (biases)
//   float W -> Q(s, z) -> DQ             W fake-quantized (QAT export): float constant of the grid
//   QLinearConv / QLinearMatMul          first rewritten to DQ -> float op -> Q (fold_qlinear)
//   X -> Cast(f16) -> Cast(f32)          the half rounding of an FP16 node: stripped, node in fp16_nodes
//
// uint8 values map to int8 with the zero point minus 128 (exact). Patterns with no exact float +
// parameters form (a computed scale, DQ of an activation no Q produced, an op between Q and DQ,
// int16 / int4 / blocked quantization, per-channel activations) throw UnsupportedOpError naming the
// node and the pattern.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"

namespace npuc::quant {

struct QdqImport {
  std::unique_ptr<Graph> graph;  // float, no Q/DQ left
  // Value name -> the parameters the file gave it (zero points in the int8 domain).
  std::map<std::string, TensorQuant> given;
  // Constant name -> its integers as the file stored them (int8 after the uint8 shift, or int32):
  // what the build must reproduce bit for bit (checkGivenParameters compares).
  std::map<std::string, Tensor> integers;
  // Nodes whose float inputs / outputs pass through Cast(float16) -> Cast(float) pairs (npuc's
  // export of FP16 nodes): the pairs are stripped and the build runs these nodes in FP16.
  std::set<std::string> fp16_nodes;
  int64_t activations = 0;  // Q -> DQ pairs stripped
  int64_t constants = 0;    // DQ'd (or fake-quantized) constants
  int64_t uint8_shifted = 0;
  std::vector<std::string> notes;
};

// True when the graph holds QuantizeLinear, DequantizeLinear, QLinearConv or QLinearMatMul.
bool isQdqModel(const Graph& graph);

// A float copy of `graph` and its given parameters. Throws UnsupportedOpError naming the node and
// the pattern npuc cannot map.
QdqImport importQdq(const Graph& graph);
// The same in place (the result's graph is null). Meant for the raw import, before shape
// inference and constant folding, which would turn DQ(int8 weights) into float weights and lose
// the integers: the caller then runs the inference tail on the float graph.
QdqImport stripQdq(Graph& graph);

}  // namespace npuc::quant
