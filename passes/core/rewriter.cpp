#include "passes/core/rewriter.h"

#include <algorithm>

#include "opset/eval.h"

namespace npuc {

bool isTriviallyDead(const Node& node) {
  for (const Value* out : node.outputs()) {
    if (out->hasUses() || out->isGraphOutput()) return false;
  }
  return true;
}

std::string Rewriter::freshNodeName(const std::string& hint, const std::string& op_type) const {
  // Node names need not be unique in the IR, but readable ones make dumps and reports useful:
  // "<replaced node>/<new op>".
  return hint.empty() ? std::string() : hint + "/" + op_type;
}

void Rewriter::place(Node* node) {
  if (insert_before_) {
    node->moveBefore(insert_before_);
  } else if (Node* last = graph_.lastNode()) {
    node->moveAfter(last);
  } else {
    // Empty graph: appendNode is the only way to seat the first node; rebuild through it.
    throw GraphError("Rewriter: cannot place node '" + node->name() + "' in an empty graph");
  }
}

Node* Rewriter::create(const std::string& op_type, const std::vector<Value*>& inputs, const Attributes& attrs,
                       const std::string& name_hint, size_t num_outputs) {
  Node* node = graph_.createNode(op_type, inputs, num_outputs, freshNodeName(name_hint, op_type));
  node->attrs() = attrs;
  place(node);
  inferNode(*node);
  if (listener_) listener_->nodeCreated(*node);
  return node;
}

Node* Rewriter::createLike(const Value& like, const std::string& op_type, const std::vector<Value*>& inputs,
                           const Attributes& attrs, const std::string& name_hint) {
  return createTyped(like.dtype(), like.shape(), op_type, inputs, attrs, name_hint);
}

Node* Rewriter::createTyped(DType dtype, const Shape& shape, const std::string& op_type,
                            const std::vector<Value*>& inputs, const Attributes& attrs,
                            const std::string& name_hint) {
  Node* node = graph_.createNode(op_type, inputs, 1, freshNodeName(name_hint, op_type));
  node->attrs() = attrs;
  place(node);
  node->output()->setType(dtype, shape);
  if (listener_) listener_->nodeCreated(*node);
  return node;
}

Node* Rewriter::createCopy(const Node& of, const std::vector<Value*>& inputs, DType dtype, const Shape& shape,
                           const Attributes& attrs) {
  Node* node = createTyped(dtype, shape, of.opType(), inputs, attrs, of.name());
  node->setDomain(of.domain());
  return node;
}

Value* Rewriter::constant(Tensor t, const std::string& name_hint) {
  return graph_.addConstant(std::move(t), name_hint);
}

bool Rewriter::canReplace(const Value& old_value, const Value& new_value) const {
  if (&old_value == &new_value) return false;
  if (!old_value.isGraphOutput()) return true;
  if (new_value.isGraphOutput() || new_value.isGraphInput()) return false;
  if (new_value.isConstant()) return !new_value.hasUses();
  return new_value.producer() != nullptr;
}

void Rewriter::replaceValue(Value* old_value, Value* new_value) {
  if (!canReplace(*old_value, *new_value)) {
    throw GraphError("Rewriter: replacing '" + old_value->name() + "' by '" + new_value->name() +
                     "' would lose the graph output name (pattern '" + current_pattern_ +
                     "' must check canReplace)");
  }
  if (old_value->isGraphOutput() && new_value->isConstant()) {
    // Value::replaceAllUsesWith only hands output names to produced values; a folded constant
    // takes the name here.
    const std::string name = old_value->name();
    old_value->setName(graph_.uniqueName(name + "_replaced"));
    new_value->setName(name);
  }
  old_value->replaceAllUsesWith(new_value);
  if (listener_) listener_->valueReplaced(*old_value, *new_value);
}

void Rewriter::replaceOp(Node* node, const std::vector<Value*>& new_values) {
  if (new_values.size() != node->numOutputs()) {
    throw GraphError("Rewriter::replaceOp: node '" + node->name() + "' has " +
                     std::to_string(node->numOutputs()) + " outputs but " +
                     std::to_string(new_values.size()) + " replacements were given");
  }
  for (size_t i = 0; i < new_values.size(); ++i) {
    if (new_values[i]) replaceValue(node->output(i), new_values[i]);
  }
  eraseNode(node);
}

void Rewriter::eraseNode(Node* node) {
  std::vector<Node*> pending{node};
  while (!pending.empty()) {
    Node* n = pending.back();
    pending.pop_back();
    if (!n->inGraph() || !isTriviallyDead(*n)) continue;
    std::vector<Node*> producers;
    for (Value* in : n->inputs()) {
      // Deduplicated: a producer read twice by `n` must not be queued (and freed) twice.
      if (in && in->producer() &&
          std::find(producers.begin(), producers.end(), in->producer()) == producers.end()) {
        producers.push_back(in->producer());
      }
    }
    if (listener_) listener_->nodeErased(*n);
    graph_.eraseNode(n);
    for (Node* p : producers) {
      if (isTriviallyDead(*p)) {
        pending.push_back(p);
      } else if (listener_) {
        listener_->nodeModified(*p);  // it lost a user: one-use guards may now pass
      }
    }
  }
}

void Rewriter::notifyModified(Node* node) {
  if (listener_) listener_->nodeModified(*node);
}

LogicalResult Rewriter::notifyMatchFailure(const Node& node, const std::string& reason) {
  recordMatchFailure(node, reason);
  return failure();
}

void Rewriter::recordMatchFailure(const Node& node, const std::string& reason) {
  if (ctx_.record_match_failures) {
    ctx_.match_failures.push_back({ctx_.current_pass, current_pattern_, node.name(), node.opType(), reason});
  }
}

}  // namespace npuc
