// Copying an inferred sub-graph into the outer graph: the one mechanism the control-flow inliner
// (passes/inline_control_flow.cpp) uses for If, Loop and Scan.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace npuc {

// Copies the nodes of sub-graphs into the outer graph right before `root`, keeping their inferred
// types, then replaces `root` (finish), handing graph-output names over.
class Splicer {
 public:
  Splicer(Graph& g, Node& root) : g_(g), root_(root) {}

  // Copies `sub` with its inputs (in sub.inputs() order) mapped to `inputs`; returns the values its
  // outputs map to. `scope` prefixes the copied node names ("If_3/then").
  std::vector<Value*> splice(const Graph& sub, const std::vector<Value*>& inputs, const std::string& scope);
  // A typed one-output node placed before the root.
  Node* add(const std::string& op, const std::vector<Value*>& ins, DType t, const Shape& s, Attributes attrs = {});
  Value* constant(Tensor t, const std::string& hint) { return g_.addConstant(std::move(t), g_.uniqueName(hint)); }
  // Replaces the root's outputs with `repl` and erases it. A graph output keeps its name: the
  // replacement takes it when it is a fresh node output, else an Identity carries it.
  void finish(const std::vector<Value*>& repl);

 private:
  std::string uniqueNodeName(const std::string& base);
  Graph& g_;
  Node& root_;
  std::unordered_set<Value*> fresh_;
  std::unordered_set<std::string> used_;
};

// Stacks per-step values along a new axis `axis` (Unsqueeze each, then one Concat).
Value* stackSteps(Splicer& sp, const std::vector<Value*>& steps, int64_t axis, const std::string& hint);

}  // namespace npuc
