// npuc IR -> ONNX ModelProto (valid for onnx.checker; npuc's own ops use the ai.npuc domain).
#pragma once

#include <set>
#include <string>

#include "ir/graph.h"

namespace npuc {

struct OnnxExportOptions {
  // The lowest default-domain opset to write (13 unless an op needs more). 18 and above keep the
  // canonical forms (Reduce* axes as an input); 21 and above write IR version 10. The QDQ export
  // of int16 / int4 plans asks for 21 (Q/DQ with int16 and int4, blocked DequantizeLinear).
  int64_t min_opset = 13;
  // Int8 constants (by value name) written as ONNX INT4 initializers: values in [-8, 7], two per
  // byte, element 2k in the low nibble (the ONNX packing). Needs min_opset >= 21.
  std::set<std::string> int4_initializers;
};

// Serialized ModelProto bytes.
std::string exportOnnxBytes(const Graph& graph, const OnnxExportOptions& options = {});
// Writes the model to `path`; throws Error naming the path if it cannot be written.
void exportOnnxFile(const Graph& graph, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace npuc
