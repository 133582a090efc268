// npuc IR -> ONNX ModelProto (valid for onnx.checker; npuc's own ops use the ai.npuc domain).
#pragma once

#include <string>

#include "ir/graph.h"

namespace npuc {

// Serialized ModelProto bytes.
std::string exportOnnxBytes(const Graph& graph);
// Writes the model to `path`; throws Error naming the path if it cannot be written.
void exportOnnxFile(const Graph& graph, const std::string& path);

}  // namespace npuc
