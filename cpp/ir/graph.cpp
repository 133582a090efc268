#include "ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <queue>
#include <unordered_set>

namespace npuc {

// ---------------------------------------------------------------- Value

bool Value::shapeIsStatic() const {
  if (!has_shape_) return false;
  return std::all_of(shape_.begin(), shape_.end(), [](int64_t d) { return d >= 0; });
}

void Value::setName(const std::string& name) {
  graph_->renameValue(this, name);
}

const Tensor& Value::constant() const {
  if (!constant_) throw GraphError("value '" + name_ + "' is not a constant");
  return *constant_;
}

void Value::setConstant(Tensor t) {
  if (producer_) throw GraphError("value '" + name_ + "' has a producer and cannot become a constant");
  setType(t.dtype(), t.shape());
  constant_ = std::move(t);
}

void Value::removeUse(Node* user, size_t index) {
  auto it = std::find(uses_.begin(), uses_.end(), Use{user, index});
  if (it == uses_.end()) {
    throw GraphError("use list of '" + name_ + "' lacks input " + std::to_string(index) + " of node '" +
                     user->name() + "'");
  }
  uses_.erase(it);
}

void Value::replaceAllUsesWith(Value* other) {
  if (other == this) return;
  std::vector<Use> uses = uses_;
  for (const Use& u : uses) u.user->setInput(u.index, other);
  if (is_graph_output_) {
    for (size_t i = 0; i < graph_->outputs_.size(); ++i) {
      if (graph_->outputs_[i] == this) graph_->setOutput(i, other);
    }
    // Graph output names are part of the model's API: the replacement takes over the name when
    // it is an ordinary intermediate value.
    if (other->producer_ && !other->is_graph_input_ &&
        std::count(graph_->outputs_.begin(), graph_->outputs_.end(), other) == 1) {
      std::string mine = name_;
      graph_->renameValue(this, graph_->uniqueName(mine + "_replaced"));
      graph_->renameValue(other, mine);
    }
  }
}

// ---------------------------------------------------------------- Node

void Node::setInput(size_t i, Value* v) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i] == v) return;
  if (inputs_[i]) inputs_[i]->removeUse(this, i);
  inputs_[i] = v;
  if (v) v->uses_.push_back({this, i});
}

void Node::addInput(Value* v) {
  setInput(inputs_.size(), v);
}

void Node::removeInput(size_t i) {
  if (i >= inputs_.size()) return;
  for (size_t j = i; j < inputs_.size(); ++j) {
    if (inputs_[j]) inputs_[j]->removeUse(this, j);
  }
  std::vector<Value*> tail(inputs_.begin() + static_cast<std::ptrdiff_t>(i) + 1, inputs_.end());
  inputs_.resize(i);
  for (Value* v : tail) addInput(v);
}

void Node::removeAllInputs() {
  for (size_t j = 0; j < inputs_.size(); ++j) {
    if (inputs_[j]) inputs_[j]->removeUse(this, j);
  }
  inputs_.clear();
}

void Node::trimTrailingNullInputs() {
  while (!inputs_.empty() && inputs_.back() == nullptr) inputs_.pop_back();
}

Value* Node::addOutput(const std::string& name) {
  std::string base =
      name.empty() ? (name_.empty() ? op_type_ : name_) + "_out" + std::to_string(outputs_.size()) : name;
  Value* v = graph_->newValue(graph_->uniqueName(base));
  v->producer_ = this;
  v->producer_index_ = outputs_.size();
  outputs_.push_back(v);
  return v;
}

Node* Node::next() const {
  if (!in_graph_) return nullptr;
  auto it = std::next(self_);
  return it == graph_->nodes_.end() ? nullptr : it->get();
}

Node* Node::prev() const {
  if (!in_graph_ || self_ == graph_->nodes_.begin()) return nullptr;
  return std::prev(self_)->get();
}

void Node::moveBefore(Node* pos) {
  if (pos == this) return;
  if (!pos->in_graph_) throw GraphError("moveBefore: anchor node '" + pos->name_ + "' is not in the graph");
  auto& from = in_graph_ ? graph_->nodes_ : graph_->detached_;
  graph_->nodes_.splice(pos->self_, from, self_);
  in_graph_ = true;
}

void Node::moveAfter(Node* pos) {
  if (pos == this) return;
  if (!pos->in_graph_) throw GraphError("moveAfter: anchor node '" + pos->name_ + "' is not in the graph");
  auto& from = in_graph_ ? graph_->nodes_ : graph_->detached_;
  graph_->nodes_.splice(std::next(pos->self_), from, self_);
  in_graph_ = true;
}

// ---------------------------------------------------------------- Graph: values

int64_t Graph::opsetVersion(const std::string& domain) const {
  auto it = opset_imports.find(domain);
  return it == opset_imports.end() ? 0 : it->second;
}

Value* Graph::newValue(const std::string& name) {
  if (by_name_.count(name)) throw GraphError("duplicate value name '" + name + "'");
  values_.push_back(std::unique_ptr<Value>(new Value(this, name)));
  Value* v = values_.back().get();
  v->self_ = std::prev(values_.end());
  by_name_[name] = v;
  return v;
}

void Graph::eraseValue(Value* v) {
  by_name_.erase(v->name_);
  values_.erase(v->self_);
}

void Graph::renameValue(Value* v, const std::string& name) {
  if (name == v->name_) return;
  if (by_name_.count(name))
    throw GraphError("cannot rename '" + v->name_ + "': name '" + name + "' is taken");
  by_name_.erase(v->name_);
  v->name_ = name;
  by_name_[name] = v;
}

std::string Graph::uniqueName(const std::string& base) const {
  if (!base.empty() && !by_name_.count(base)) return base;
  std::string stem = base.empty() ? "v" : base;
  for (size_t k = 1;; ++k) {
    std::string cand = stem + "_" + std::to_string(k);
    if (!by_name_.count(cand)) return cand;
  }
}

Value* Graph::addInput(const std::string& name, DType dtype, Shape shape, bool has_shape) {
  Value* v = newValue(name);
  v->dtype_ = dtype;
  v->shape_ = std::move(shape);
  v->has_shape_ = has_shape;
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::addConstant(Tensor t, const std::string& name) {
  Value* v = newValue(uniqueName(name.empty() ? "const" : name));
  v->setConstant(std::move(t));
  return v;
}

void Graph::addOutput(Value* v) {
  outputs_.push_back(v);
  v->is_graph_output_ = true;
}

void Graph::setOutput(size_t i, Value* v) {
  Value* old = outputs_.at(i);
  outputs_[i] = v;
  old->is_graph_output_ = std::find(outputs_.begin(), outputs_.end(), old) != outputs_.end();
  v->is_graph_output_ = true;
}

void Graph::removeOutput(size_t i) {
  Value* old = outputs_.at(i);
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
  old->is_graph_output_ = std::find(outputs_.begin(), outputs_.end(), old) != outputs_.end();
}

void Graph::removeInput(size_t i) {
  Value* v = inputs_.at(i);
  if (v->hasUses()) throw GraphError("cannot remove graph input '" + v->name() + "': it still has uses");
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  v->is_graph_input_ = false;
  if (!v->is_graph_output_) eraseValue(v);
}

Value* Graph::findValue(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (auto& v : values_) out.push_back(v.get());
  return out;
}

size_t Graph::removeUnusedValues() {
  size_t removed = 0;
  for (auto it = values_.begin(); it != values_.end();) {
    Value* v = it->get();
    ++it;
    if (!v->producer_ && !v->is_graph_input_ && !v->is_graph_output_ && v->uses_.empty()) {
      eraseValue(v);
      ++removed;
    }
  }
  return removed;
}

bool Graph::eraseIfUnusedConstant(Value* v) {
  if (!v->isConstant() || v->is_graph_input_ || v->is_graph_output_ || !v->uses_.empty()) return false;
  eraseValue(v);
  return true;
}

// ---------------------------------------------------------------- Graph: nodes

Node* Graph::createNode(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                        const std::string& name) {
  detached_.push_back(std::unique_ptr<Node>(new Node(this, op_type)));
  Node* n = detached_.back().get();
  n->self_ = std::prev(detached_.end());
  n->name_ = name.empty() ? op_type + "_" + std::to_string(name_counter_++) : name;
  for (Value* v : inputs) n->addInput(v);
  for (size_t i = 0; i < num_outputs; ++i) n->addOutput();
  return n;
}

Node* Graph::appendNode(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                        const std::string& name) {
  Node* n = createNode(op_type, inputs, num_outputs, name);
  nodes_.splice(nodes_.end(), detached_, n->self_);
  n->in_graph_ = true;
  return n;
}

Node* Graph::insertNodeBefore(Node* pos, const std::string& op_type, const std::vector<Value*>& inputs,
                              size_t num_outputs, const std::string& name) {
  Node* n = createNode(op_type, inputs, num_outputs, name);
  n->moveBefore(pos);
  return n;
}

Node* Graph::insertNodeAfter(Node* pos, const std::string& op_type, const std::vector<Value*>& inputs,
                             size_t num_outputs, const std::string& name) {
  Node* n = createNode(op_type, inputs, num_outputs, name);
  n->moveAfter(pos);
  return n;
}

void Graph::eraseNode(Node* n) {
  for (Value* out : n->outputs_) {
    if (out->hasUses() || out->is_graph_output_) {
      throw GraphError("cannot erase node '" + n->name_ + "': its output '" + out->name() +
                       "' is still used");
    }
  }
  n->removeAllInputs();
  for (Value* out : n->outputs_) eraseValue(out);
  n->outputs_.clear();
  (n->in_graph_ ? nodes_ : detached_).erase(n->self_);
}

Node* Graph::firstNode() const {
  return nodes_.empty() ? nullptr : nodes_.front().get();
}
Node* Graph::lastNode() const {
  return nodes_.empty() ? nullptr : nodes_.back().get();
}

std::vector<Node*> Graph::nodeList() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::findNode(const std::string& name) const {
  for (auto& n : nodes_) {
    if (n->name_ == name) return n.get();
  }
  return nullptr;
}

void Graph::renumber() {
  int64_t k = 0;
  for (auto& n : nodes_) n->order_ = k++;
}

void Graph::topoSort() {
  // Kahn's algorithm; ties are broken by the current position so an already-sorted graph keeps
  // its order exactly.
  renumber();
  std::unordered_map<Node*, size_t> pending;
  std::priority_queue<std::pair<int64_t, Node*>, std::vector<std::pair<int64_t, Node*>>, std::greater<>>
      ready;
  for (auto& up : nodes_) {
    Node* n = up.get();
    std::unordered_set<Node*> deps;
    for (Value* in : n->inputs_) {
      if (in && in->producer_ && in->producer_ != n) deps.insert(in->producer_);
      if (in && in->producer_ == n)
        throw GraphError("graph has a cycle: node '" + n->name_ + "' consumes its own output");
    }
    pending[n] = deps.size();
    if (deps.empty()) ready.push({n->order_, n});
  }
  std::vector<Node*> sorted;
  sorted.reserve(nodes_.size());
  while (!ready.empty()) {
    Node* n = ready.top().second;
    ready.pop();
    sorted.push_back(n);
    std::unordered_set<Node*> consumers;
    for (Value* out : n->outputs_) {
      for (const Use& u : out->uses_) consumers.insert(u.user);
    }
    for (Node* c : consumers) {
      if (c->in_graph_ && --pending[c] == 0) ready.push({c->order_, c});
    }
  }
  if (sorted.size() != nodes_.size()) {
    for (auto& up : nodes_) {
      if (pending[up.get()] != 0) {
        throw GraphError("graph has a cycle through node '" + up->name_ + "' (" + up->op_type_ + ")");
      }
    }
  }
  for (Node* n : sorted) nodes_.splice(nodes_.end(), nodes_, n->self_);
  renumber();
}

// ---------------------------------------------------------------- verify

void Graph::verify() const {
  auto fail = [](const std::string& msg) { throw GraphError("graph verification failed: " + msg); };
  std::unordered_set<const Value*> defined;
  std::unordered_set<const Value*> owned;
  for (auto& v : values_) {
    owned.insert(v.get());
    if (by_name_.count(v->name_) == 0 || by_name_.at(v->name_) != v.get()) {
      fail("value '" + v->name_ + "' is missing from the name index");
    }
    if (v->producer_ && (v->is_graph_input_ || v->constant_)) {
      fail("value '" + v->name_ + "' has a producer and is also a graph input or constant");
    }
    if (v->is_graph_input_ || v->constant_) defined.insert(v.get());
    for (const Use& u : v->uses_) {
      if (!u.user->in_graph_)
        fail("value '" + v->name_ + "' is used by detached node '" + u.user->name_ + "'");
      if (u.user->input(u.index) != v.get()) {
        fail("use list of '" + v->name_ + "' names input " + std::to_string(u.index) + " of '" +
             u.user->name_ + "', which holds another value");
      }
    }
  }
  if (by_name_.size() != values_.size()) fail("name index and value list disagree");
  for (const Value* in : inputs_) {
    if (!owned.count(in) || !in->is_graph_input_)
      fail("graph input '" + in->name_ + "' is not a registered input");
  }
  std::unordered_set<const Node*> seen_nodes;
  for (auto& up : nodes_) {
    const Node* n = up.get();
    if (!n->in_graph_) fail("node '" + n->name_ + "' is listed but marked detached");
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      const Value* in = n->inputs_[i];
      if (!in) continue;
      if (!owned.count(in))
        fail("node '" + n->name_ + "' input " + std::to_string(i) + " is not owned by the graph");
      if (!defined.count(in)) {
        if (in->producer_ && !in->producer_->in_graph_) {
          fail("node '" + n->name_ + "' reads '" + in->name_ + "', produced by a detached node");
        }
        fail("node '" + n->name_ + "' (" + n->op_type_ + ") reads '" + in->name_ +
             "' before it is defined (dangling input or nodes out of topological order)");
      }
      if (std::find(in->uses_.begin(), in->uses_.end(), Use{const_cast<Node*>(n), i}) == in->uses_.end()) {
        fail("value '" + in->name_ + "' lacks the use by input " + std::to_string(i) + " of '" + n->name_ +
             "'");
      }
    }
    for (size_t i = 0; i < n->outputs_.size(); ++i) {
      const Value* out = n->outputs_[i];
      if (out->producer_ != n || out->producer_index_ != i) {
        fail("output " + std::to_string(i) + " of node '" + n->name_ + "' names another producer");
      }
      if (!defined.insert(out).second) fail("value '" + out->name_ + "' is defined twice");
    }
    seen_nodes.insert(n);
  }
  for (const Value* out : outputs_) {
    if (!defined.count(out)) fail("graph output '" + out->name_ + "' is never defined");
    if (!out->is_graph_output_) fail("graph output '" + out->name_ + "' is not flagged as an output");
  }
}

// ---------------------------------------------------------------- dump

namespace {
std::string typeStr(const Value* v) {
  std::string s = dtypeName(v->dtype());
  if (v->hasShape()) s += shapeStr(v->shape());
  return s;
}

std::string attrStr(const AttrValue& a) {
  struct Visitor {
    std::string operator()(int64_t v) const { return fmt::format("{}", v); }
    // Floats print as std::to_string did ("%f": fixed, 6 decimals), not fmt's shortest form.
    std::string operator()(float v) const { return fmt::format("{:f}", v); }
    // Bytes rather than text (a control-flow sub-graph is held serialized): shown by size, so the
    // dump stays printable (and valid UTF-8 for Python).
    std::string operator()(const std::string& v) const {
      const bool binary = std::any_of(v.begin(), v.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
      });
      return binary ? fmt::format("<{} bytes>", v.size()) : fmt::format("\"{}\"", v);
    }
    std::string operator()(const std::vector<int64_t>& v) const { return shapeStr(v); }
    std::string operator()(const std::vector<float>& v) const {
      return fmt::format("[{:f}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return v.empty() ? "[]" : fmt::format("[\"{}\"]", fmt::join(v, "\",\""));
    }
    std::string operator()(const Tensor& t) const {
      return fmt::format("tensor<{}{}>", dtypeName(t.dtype()), shapeStr(t.shape()));
    }
  };
  return std::visit(Visitor{}, a);
}
}  // namespace

std::string Graph::dump() const {
  fmt::memory_buffer s;
  auto out = std::back_inserter(s);
  auto typed = [](const Value* v) { return fmt::format("{}: {}", v->name_, typeStr(v)); };
  std::vector<std::string> items;
  for (const Value* v : inputs_) items.push_back(typed(v));
  fmt::format_to(out, "graph {} ({})\n", name.empty() ? "<unnamed>" : name, fmt::join(items, ", "));
  for (auto& up : nodes_) {
    const Node* n = up.get();
    items.clear();
    for (const Value* v : n->outputs_) items.push_back(typed(v));
    fmt::format_to(out, "  {} = {}{}{}(", fmt::join(items, ", "), n->domain_, n->domain_.empty() ? "" : ".",
                   n->op_type_);
    items.clear();
    for (const Value* in : n->inputs_) items.push_back(in ? (in->constant_ ? "$" : "%") + in->name_ : "_");
    fmt::format_to(out, "{})", fmt::join(items, ", "));
    if (!n->attrs_.empty()) {
      items.clear();
      for (auto& [k, v] : n->attrs_.all()) items.push_back(fmt::format("{}={}", k, attrStr(v)));
      fmt::format_to(out, " {{{}}}", fmt::join(items, ", "));
    }
    fmt::format_to(out, "  # {}\n", n->name_);
  }
  items.clear();
  for (const Value* v : outputs_) items.push_back(v->name_);
  fmt::format_to(out, "  return {}\n", fmt::join(items, ", "));
  return fmt::to_string(s);
}

// ---------------------------------------------------------------- clone

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->opset_imports = opset_imports;
  g->metadata = metadata;
  g->custom_ops = custom_ops;
  g->name_counter_ = name_counter_;
  std::unordered_map<const Value*, Value*> map;
  // Inputs first (in order), then every other producer-less value, so names stay identical.
  for (const Value* in : inputs_) {
    Value* c = g->addInput(in->name_, in->dtype_, in->shape_, in->has_shape_);
    map[in] = c;
  }
  for (auto& v : values_) {
    if (v->producer_ || v->is_graph_input_) continue;
    Value* c = g->newValue(v->name_);
    c->dtype_ = v->dtype_;
    c->shape_ = v->shape_;
    c->has_shape_ = v->has_shape_;
    c->constant_ = v->constant_;
    map[v.get()] = c;
  }
  for (auto& up : nodes_) {
    const Node* n = up.get();
    Node* c = g->createNode(n->op_type_, {}, 0, n->name_);
    c->domain_ = n->domain_;
    c->attrs_ = n->attrs_;
    for (Value* out : n->outputs_) {
      Value* co = c->addOutput(out->name_);
      co->dtype_ = out->dtype_;
      co->shape_ = out->shape_;
      co->has_shape_ = out->has_shape_;
      map[out] = co;
    }
    for (Value* in : n->inputs_) c->addInput(in ? map.at(in) : nullptr);
    g->nodes_.splice(g->nodes_.end(), g->detached_, c->self_);
    c->in_graph_ = true;
  }
  for (const Value* out : outputs_) g->addOutput(map.at(out));
  return g;
}

}  // namespace npuc
