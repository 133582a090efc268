// The one way patterns edit the graph (in the spirit of MLIR's PatternRewriter). Going through the
// Rewriter keeps three promises the rest of the pipeline relies on:
//   * every node it creates has typed outputs (shape inference runs on it, or the caller states
//     the type), so shape information stays valid between passes;
//   * nodes left dead by a replacement are erased at once, so one-use guards see true use counts;
//   * the greedy driver hears about every change (through the Listener) and revisits exactly the
//     nodes a change can enable.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/logical_result.h"
#include "passes/core/pass_context.h"

namespace npuc {

class Rewriter {
 public:
  // Observes changes; the greedy driver implements it to maintain its worklist.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void nodeCreated(Node& node) = 0;
    virtual void nodeModified(Node& node) = 0;
    virtual void nodeErased(Node& node) = 0;
    virtual void valueReplaced(Value& old_value, Value& new_value) = 0;
  };

  Rewriter(Graph& graph, PassContext& ctx, Listener* listener = nullptr)
      : graph_(graph), ctx_(ctx), listener_(listener) {}

  Graph& graph() const { return graph_; }
  PassContext& context() const { return ctx_; }

  // ---- where new nodes go: right before `pos` (the default is the end of the graph).
  void setInsertionPointBefore(Node* pos) { insert_before_ = pos; }
  void setInsertionPointAfter(Node* pos) { insert_before_ = pos->next(); }

  // Creates a node at the insertion point and infers its output types with the op's shape
  // inference. `name_hint` (usually the replaced node's name) keeps the graph readable.
  Node* create(const std::string& op_type, const std::vector<Value*>& inputs, const Attributes& attrs = {},
               const std::string& name_hint = "", size_t num_outputs = 1);
  // Same, but output 0 takes the type of `like` (for ops whose result type the caller knows, e.g.
  // a merged Reshape that reproduces an existing value's shape).
  Node* createLike(const Value& like, const std::string& op_type, const std::vector<Value*>& inputs,
                   const Attributes& attrs = {}, const std::string& name_hint = "");
  // Same with an explicit output type.
  Node* createTyped(DType dtype, const Shape& shape, const std::string& op_type,
                    const std::vector<Value*>& inputs, const Attributes& attrs = {},
                    const std::string& name_hint = "");
  // A copy of the one-output node `of` (op type, domain, attributes `attrs`) reading `inputs`, with
  // the given output type: an op moved across a view, a Transpose or a Concat. The domain comes
  // with it, so an ai.npuc op stays one.
  Node* createCopy(const Node& of, const std::vector<Value*>& inputs, DType dtype, const Shape& shape,
                   const Attributes& attrs);
  // A new constant value named after `name_hint`.
  Value* constant(Tensor t, const std::string& name_hint = "");

  // True if `old_value` can be replaced by `new_value` without the model losing an output name:
  // a graph output hands its name to a replacement only if that is an ordinary intermediate (or a
  // fresh, unused constant) that is not already an output. Check it before building anything.
  bool canReplace(const Value& old_value, const Value& new_value) const;
  // Points every use of `old_value` (graph-output slot included) at `new_value`.
  // Precondition: canReplace(old_value, new_value).
  void replaceValue(Value* old_value, Value* new_value);
  // Replaces the outputs of `node` one by one with `new_values`, then erases `node` and whatever
  // became dead because of it.
  void replaceOp(Node* node, const std::vector<Value*>& new_values);
  // Erases `node` (whose outputs must be unused) and then, transitively, the producers of its
  // inputs that are left without consumers.
  void eraseNode(Node* node);
  // Call after changing a node in place (attributes, input order, input values).
  void notifyModified(Node* node);

  // Records why `node` did not match (tagged with the running pass and pattern) and returns
  // failure(), so a pattern writes `return rw.notifyMatchFailure(n, "...")`.
  LogicalResult notifyMatchFailure(const Node& node, const std::string& reason);
  // The same record for passes that are plain loops rather than patterns.
  void recordMatchFailure(const Node& node, const std::string& reason);
  void setCurrentPattern(const char* name) { current_pattern_ = name; }

 private:
  void place(Node* node);
  std::string freshNodeName(const std::string& hint, const std::string& op_type) const;

  Graph& graph_;
  PassContext& ctx_;
  Listener* listener_;
  Node* insert_before_ = nullptr;
  const char* current_pattern_ = "";
};

// True if nothing reads the node's outputs and none of them is a graph output.
bool isTriviallyDead(const Node& node);

}  // namespace npuc
