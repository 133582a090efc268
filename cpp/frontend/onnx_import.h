// ONNX -> npuc IR: parse (file or bytes, external data) -> IR -> legacy opset forms upgraded to the
// canonical forms of opset/registry.h; then the generic tail every frontend shares
// (frontend/import_tail.h: input_size_list, cut at outputs, verify, shape inference with constant
// folding so Shape/Gather/Concat sub-graphs disappear, every op checked against the registry).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontend/import_tail.h"
#include "ir/graph.h"

namespace npuc {

// Reads `path` (external data files are resolved relative to its folder).
// Throws ModelLoadError (unreadable / not ONNX / truncated / bad initializer),
// UnsupportedOpError, ShapeError or GraphError, each naming the file and the node.
std::unique_ptr<Graph> importOnnxFile(const std::string& path, const ImportOptions& opts = {});
// Parses serialized ModelProto bytes; `base_dir` resolves external data ("" = none allowed).
std::unique_ptr<Graph> importOnnxBytes(const std::string& bytes, const ImportOptions& opts = {},
                                       const std::string& base_dir = "");

}  // namespace npuc
