// The user-facing parts of loading that RKNN users know from load_onnx(): fixing dynamic input
// dims (input_size_list), cutting the graph at chosen outputs, and the "pass input_size_list"
// guidance when a dim stays unknown.
#pragma once

#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "ir/graph.h"

namespace npuc {

// Applies opts.input_sizes to the inputs named by opts.input_names (all graph inputs in order
// when empty). Throws ModelLoadError naming the input and both shapes when rank or a known dim
// disagrees, or when the counts or names do not match the model.
void applyInputSizes(Graph& graph, const ImportOptions& opts);

// Makes `names` the graph outputs and drops every node (and graph input) they do not need.
// Throws ModelLoadError listing a few valid tensor names for an unknown name.
void cutAtOutputs(Graph& graph, const std::vector<std::string>& names);

// " The model has dynamic inputs; fix them ... inputs=['x'], input_size_list=[[?,3,?,?]]." for the graph inputs
// whose shape is not static; empty when all are.
std::string dynamicInputHint(const Graph& graph);

// Throws ShapeError naming the first value whose shape is still not static, with the hint above,
// and ResourceError naming a graph input or node output larger than kMaxTensorBytes.
void requireStaticShapes(const Graph& graph);

}  // namespace npuc
