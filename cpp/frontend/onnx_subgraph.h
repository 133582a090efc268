// Control-flow sub-graphs (If's then/else_branch, Loop's and Scan's body) between the ONNX file
// and the IR.
//
// The IR's attributes hold no graphs, so a sub-graph travels as its serialized GraphProto in a
// String attribute of the same name (then_branch, else_branch, body), decoded where it is needed:
// shape inference, the host kernel and the inlining pass. Keeping it serialized also keeps every
// consumer of attributes (digests, blob encoding, dumps, clone) working unchanged.
//
// A sub-graph may read outer-scope values by name. The importer turns those implicit reads into
// ordinary extra inputs of the node, after its ONNX inputs, and lists the names they carry inside
// the sub-graphs in the Strings attribute kImplicitInputsAttr: so dead-code removal, topological
// sort and renaming passes see the true data flow.
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace npuc {

constexpr const char* kImplicitInputsAttr = "implicit_inputs";

// How deep control flow may nest (sub-graphs inside sub-graphs); exported models use 1 to 3.
constexpr int kMaxSubgraphDepth = 8;

// Names a graph reads but does not define (inputs, initializers, node outputs), its nested
// sub-graphs included, in order of first use.
std::vector<std::string> subgraphFreeNames(const onnx::GraphProto& g);

// How one input of a sub-graph is bound when it is built: its type, and its value when the outer
// value is a constant (outer weights stay constants inside, so kernels can pack them).
struct SubgraphBinding {
  std::string name;  // the name inside the sub-graph
  DType dtype = DType::Undefined;
  Shape shape;
  const Tensor* constant = nullptr;
};

// Decodes the sub-graph attribute `attr` of `node` into an IR graph, shape-inferred and folded:
// `formal` binds the GraphProto's own inputs in order (their count must match), `implicit` the
// outer names it reads (kImplicitInputsAttr order). Non-constant bindings become graph inputs in
// that order (formal first), constants become constants. Errors name the node and attribute.
std::unique_ptr<Graph> buildSubgraph(const Node& node, const std::string& attr,
                                     const std::vector<SubgraphBinding>& formal,
                                     const std::vector<SubgraphBinding>& implicit);

// The number of inputs the sub-graph attribute `attr` of `node` declares (the formal ones).
size_t subgraphFormalInputCount(const Node& node, const std::string& attr);

// The names node's implicit inputs carry inside its sub-graphs (empty when it has none).
std::vector<std::string> implicitInputNames(const Node& node);
// How many of node's inputs are its ONNX (explicit) inputs.
size_t numExplicitInputs(const Node& node);

// Whether attribute `attr` of `node` is a control-flow sub-graph (If's then/else_branch, Loop's
// and Scan's body).
bool isSubgraphAttr(const Node& node, const std::string& attr);

// Writes sub-graph attribute `attr` of `node` back as an ONNX GRAPH attribute, with the outer names
// it reads renamed to the current names of the node's implicit inputs (passes may have renamed
// them since import).
void subgraphAttrToProto(const Node& node, const std::string& attr, onnx::AttributeProto* a);

}  // namespace npuc
