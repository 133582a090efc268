// The frontend seam: what every model reader shares after it has parsed its format.
//
// A frontend (ONNX today; TFLite, Darknet, Caffe next) only parses its file and canonicalizes to
// the one IR: npuc's op names in their canonical forms (opset/registry.h), constants as Values,
// inputs and outputs named. finishImport() then runs the generic tail the same way for all of
// them: weight value checks, RKNN's input_size_list, cutting at requested outputs, topological
// sort and verification, shape inference with constant folding, static-shape and size limits,
// and the op support check. Errors are the typed ones of common/error.h; the caller adds the
// file name (frontends prefix it, as importOnnxFile does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/fold_limit.h"

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
  int64_t fold_limit_bytes = kDefaultFoldLimitBytes;
  // Run shape inference + folding + op support checks (off only for tests of the raw import).
  bool infer_shapes = true;
  // User-defined ops the model may use (reg_custom_op); the graph keeps the set.
  std::shared_ptr<const CustomOpSet> custom_ops;
};

// The generic tail of import on a freshly parsed, canonicalized graph. Throws ModelLoadError (bad
// input sizes or output names, NaN / Inf weights), GraphError (a cycle, a dangling value),
// ShapeError (with the input_size_list hint for dynamic inputs), ResourceError (a tensor beyond
// the size limit) or UnsupportedOpError, each naming the node or value.
void finishImport(Graph& graph, const ImportOptions& opts);

}  // namespace npuc
