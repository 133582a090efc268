// Reference evaluation on top of the op registry: run one node, or a whole graph node by node,
// on host tensors. It allocates freely and is meant for constant folding, tests and as the
// "obviously correct" peer the planned executor (cpp/runtime) is compared against.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "opset/registry.h"

namespace npuc {

// Runs `node` (whose input values must have known types) on `inputs` (null for omitted
// optional inputs) and returns its outputs. Output types come from the node's output values if
// they are known, else from the op's shape inference. Errors are prefixed with the node name.
std::vector<Tensor> evalNode(const Node& node, const std::vector<const Tensor*>& inputs);

// Runs the whole graph. `feeds` maps graph input names to tensors; returns graph outputs in order.
std::vector<Tensor> evalGraph(const Graph& graph, const std::map<std::string, Tensor>& feeds);

// "node '<name>' (<op>): ", the prefix every per-node error carries.
std::string nodeErrorPrefix(const Node& node);
// Inside a catch block: re-throws the active npuc error as the same type with the node named in
// front (UnsupportedOpError already names it and passes through unchanged).
[[noreturn]] void rethrowWithNodeContext(const Node& node);

// Runs the op's shape inference on one node and fills its output types. Errors are ShapeError
// (or UnsupportedOpError) prefixed with "node '<name>' (<op>): ".
void inferNode(Node& node);

}  // namespace npuc
