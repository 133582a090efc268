// ONNX -> npuc IR. Importing runs the whole load stage of the flow:
//   parse (file or bytes, external data) -> IR (legacy opset forms upgraded to the canonical
//   forms described in opset/registry.h) -> fix input shapes (input_size_list) -> cut at the
//   requested outputs -> topological sort + verify -> shape inference with constant folding
//   (Shape/Gather/Concat/... sub-graphs disappear) -> every op checked against the registry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace npuc {

struct ImportOptions {
  // Names of the graph inputs that `input_sizes` refers to; empty means "all graph inputs in
  // order" (initializers that are also listed as inputs are not counted, as in ONNX Runtime).
  std::vector<std::string> input_names;
  // RKNN's input_size_list: one full shape per input, fixing dynamic dims.
  std::vector<Shape> input_sizes;
  // Cut the graph so these tensors are its outputs (empty keeps the model's outputs).
  std::vector<std::string> output_names;
  // Constant folding never creates a tensor larger than this; the op is kept instead.
  int64_t fold_limit_bytes = int64_t{256} << 20;
  // Run shape inference + folding + op support checks (off only for tests of the raw import).
  bool infer_shapes = true;
};

// Reads `path` (external data files are resolved relative to its folder).
// Throws ModelLoadError (unreadable / not ONNX / truncated / bad initializer),
// UnsupportedOpError, ShapeError or GraphError, each naming the file and the node.
std::unique_ptr<Graph> importOnnxFile(const std::string& path, const ImportOptions& opts = {});
// Parses serialized ModelProto bytes; `base_dir` resolves external data ("" = none allowed).
std::unique_ptr<Graph> importOnnxBytes(const std::string& bytes, const ImportOptions& opts = {},
                                       const std::string& base_dir = "");

}  // namespace npuc
