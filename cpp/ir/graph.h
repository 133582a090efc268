// The npuc IR: one Graph from import to lowering (in the spirit of onnx/common/ir.h).
//
//  * A Graph owns Nodes kept in topological order and Values.
//  * Each Value has at most one producer (a Node output) and a use list of (node, input index).
//    Graph inputs and constants have no producer. Constants are Values carrying a Tensor: there is
//    no Constant-node vs initializer split inside the IR.
//  * Every mutation (setInput, replaceAllUsesWith, erase) keeps use lists consistent; verify()
//    checks that, plus topological order, name uniqueness and dangling references.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"

namespace npuc {

class Graph;
class Node;
class CustomOpSet;  // opset/custom_ops.h

struct Use {
  Node* user;
  size_t index;  // which input of `user`
  bool operator==(const Use& o) const { return user == o.user && index == o.index; }
};

class Value {
 public:
  const std::string& name() const { return name_; }
  // Renames; throws GraphError if another value of the graph already has the name.
  void setName(const std::string& name);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  bool hasShape() const { return has_shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  // True when the shape is known and has no unknown (negative) dims.
  bool shapeIsStatic() const;
  void setType(DType dtype, Shape shape) {
    dtype_ = dtype;
    shape_ = std::move(shape);
    has_shape_ = true;
  }
  void setDType(DType dtype) { dtype_ = dtype; }
  void clearShape() {
    shape_.clear();
    has_shape_ = false;
  }

  Node* producer() const { return producer_; }
  size_t producerIndex() const { return producer_index_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  // Number of distinct consumers, counting a graph output as one.
  size_t numConsumers() const { return uses_.size() + (is_graph_output_ ? 1 : 0); }

  bool isConstant() const { return constant_.has_value(); }
  const Tensor& constant() const;
  // Turns this value into a constant (it must have no producer); dtype/shape follow the tensor.
  void setConstant(Tensor t);
  bool isGraphInput() const { return is_graph_input_; }
  bool isGraphOutput() const { return is_graph_output_; }

  // Points every use of this value (and its graph-output slots) at `other`.
  void replaceAllUsesWith(Value* other);
  // Points the uses accepted by `pred` at `other`.
  template <typename Pred>
  void replaceUsesWith(Value* other, Pred pred);

  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* g, std::string name) : graph_(g), name_(std::move(name)) {}
  void removeUse(Node* user, size_t index);

  Graph* graph_;
  std::string name_;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  bool has_shape_ = false;
  Node* producer_ = nullptr;
  size_t producer_index_ = 0;
  std::vector<Use> uses_;
  std::optional<Tensor> constant_;
  bool is_graph_input_ = false;
  bool is_graph_output_ = false;
  std::list<std::unique_ptr<Value>>::iterator self_;
};

class Node {
 public:
  const std::string& opType() const { return op_type_; }
  void setOpType(std::string op) { op_type_ = std::move(op); }
  const std::string& domain() const { return domain_; }
  void setDomain(std::string d) { domain_ = std::move(d); }
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }

  size_t numInputs() const { return inputs_.size(); }
  // A missing optional input is a null Value*. input(i) with i >= numInputs() is also null.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  bool hasInput(size_t i) const { return input(i) != nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  void setInput(size_t i, Value* v);  // grows the input list with nulls if needed
  void addInput(Value* v);
  void removeInput(size_t i);        // shifts later inputs down
  void removeAllInputs();
  // Drops trailing null (omitted optional) inputs.
  void trimTrailingNullInputs();

  size_t numOutputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return outputs_.at(i); }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* addOutput(const std::string& name = "");

  // Topological neighbours; null at the ends. Only valid while the node is in the graph.
  Node* next() const;
  Node* prev() const;
  // Moves (or places a freshly created node) right before / after `pos`.
  void moveBefore(Node* pos);
  void moveAfter(Node* pos);
  bool inGraph() const { return in_graph_; }
  // Position in topological order, valid after Graph::renumber() until the next insertion.
  int64_t order() const { return order_; }

  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  friend class Value;
  Node(Graph* g, std::string op_type) : graph_(g), op_type_(std::move(op_type)) {}

  Graph* graph_;
  std::string op_type_;
  std::string domain_;
  std::string name_;
  Attributes attrs_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  bool in_graph_ = false;
  int64_t order_ = -1;
  std::list<std::unique_ptr<Node>>::iterator self_;  // position in Graph::nodes_ or detached_
};

// Iterates the nodes of a graph in topological order. Safe against erasing the current node
// (the next pointer is taken before the body runs).
class NodeRange {
 public:
  class iterator {
   public:
    iterator(Node* n) : cur_(n), nxt_(n ? n->next() : nullptr) {}
    Node* operator*() const { return cur_; }
    iterator& operator++() {
      cur_ = nxt_;
      nxt_ = cur_ ? cur_->next() : nullptr;
      return *this;
    }
    bool operator!=(const iterator& o) const { return cur_ != o.cur_; }

   private:
    Node* cur_;
    Node* nxt_;
  };
  explicit NodeRange(Node* first) : first_(first) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(nullptr); }

 private:
  Node* first_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  // opset imports by domain ("" is the default ONNX domain).
  std::map<std::string, int64_t> opset_imports{{"", 13}};
  int64_t opsetVersion(const std::string& domain = "") const;
  // Free-form metadata carried through export (producer, doc string, ...).
  std::map<std::string, std::string> metadata;
  // The user-defined ops this graph may use (reg_custom_op), found through a node's graph by
  // OpRegistry::find(const Node&); null for none. Shared and immutable; clone() copies the pointer.
  std::shared_ptr<const CustomOpSet> custom_ops;

  // ---- values
  // Creates a fresh graph input appended to inputs().
  Value* addInput(const std::string& name, DType dtype, Shape shape, bool has_shape = true);
  // Creates a constant value; `name` is made unique if taken ("" picks one).
  Value* addConstant(Tensor t, const std::string& name = "");
  // Marks an existing value as a graph output (appended).
  void addOutput(Value* v);
  void setOutput(size_t i, Value* v);
  void removeOutput(size_t i);
  void removeInput(size_t i);  // the input must have no uses
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* findValue(const std::string& name) const;
  // `base` if unused, else base_1, base_2, ...
  std::string uniqueName(const std::string& base) const;
  size_t numValues() const { return values_.size(); }
  // All values (inputs, constants, node outputs), in creation order.
  std::vector<Value*> values() const;
  // Constants and graph-less values nobody uses are erased; returns how many.
  size_t removeUnusedValues();
  // Erases `v` (and frees its tensor, unless shared) if it is a constant nobody uses: constant
  // folding drops its dead inputs as it goes, so a chain of folds holds one link at a time.
  // Returns whether it did.
  bool eraseIfUnusedConstant(Value* v);

  // ---- nodes
  // Creates a detached node; place it with appendNode / Node::moveBefore / moveAfter.
  // Outputs get unique names derived from the node name (or op type).
  Node* createNode(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                   const std::string& name = "");
  // Creates and places a node at the end / right before `pos`.
  Node* appendNode(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                   const std::string& name = "");
  Node* insertNodeBefore(Node* pos, const std::string& op_type, const std::vector<Value*>& inputs,
                         size_t num_outputs, const std::string& name = "");
  Node* insertNodeAfter(Node* pos, const std::string& op_type, const std::vector<Value*>& inputs,
                        size_t num_outputs, const std::string& name = "");
  // Erases a node. Its outputs must have no uses and not be graph outputs (GraphError otherwise).
  void eraseNode(Node* n);
  Node* firstNode() const;
  Node* lastNode() const;
  NodeRange nodes() const { return NodeRange(firstNode()); }
  std::vector<Node*> nodeList() const;
  size_t numNodes() const { return nodes_.size(); }
  Node* findNode(const std::string& name) const;
  // Assigns Node::order() 0..n-1 along the list.
  void renumber();
  // Re-sorts nodes topologically (stable w.r.t. the current order). Throws GraphError naming a
  // node on the cycle if there is one.
  void topoSort();

  // Structural checks; throws GraphError with the first problem found.
  void verify() const;
  // Human-readable text form, one node per line.
  std::string dump() const;
  // Deep copy (constants share tensor storage, which is immutable by convention).
  std::unique_ptr<Graph> clone() const;

 private:
  friend class Value;
  friend class Node;
  Value* newValue(const std::string& name);
  void eraseValue(Value* v);
  void renameValue(Value* v, const std::string& name);

  std::list<std::unique_ptr<Node>> nodes_;
  std::list<std::unique_ptr<Node>> detached_;
  std::list<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  size_t name_counter_ = 0;
};

template <typename Pred>
void Value::replaceUsesWith(Value* other, Pred pred) {
  std::vector<Use> keep, move;
  for (const Use& u : uses_) (pred(u) ? move : keep).push_back(u);
  for (const Use& u : move) u.user->setInput(u.index, other);
}

}  // namespace npuc
