#include "passes/control_flow_splice.h"

#include <unordered_map>

namespace npuc {

std::vector<Value*> Splicer::splice(const Graph& sub, const std::vector<Value*>& inputs, const std::string& scope) {
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < sub.inputs().size(); ++i) map[sub.inputs()[i]] = inputs.at(i);
  auto lookup = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    // An outer constant bound into the sub-graph maps back to itself (no copy of the weights);
    // other constants are created when first read (sharing the sub-graph's tensor storage).
    for (Value* in : root_.inputs()) {
      if (in && in->isConstant() && in->constant().raw() == v->constant().raw() &&
          in->shape() == v->shape() && in->dtype() == v->dtype()) {
        map[v] = in;
        return in;
      }
    }
    Value* c = g_.addConstant(v->constant(), g_.uniqueName(scope + "/" + v->name()));
    map[v] = c;
    return c;
  };
  for (const Node* n : sub.nodes()) {
    std::vector<Value*> ins;
    for (const Value* v : n->inputs()) ins.push_back(lookup(v));
    Node* copy = g_.createNode(n->opType(), ins, n->numOutputs(), uniqueNodeName(scope + "/" + n->name()));
    copy->setDomain(n->domain());
    copy->attrs() = n->attrs();
    copy->moveBefore(&root_);
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      copy->output(i)->setType(n->output(i)->dtype(), n->output(i)->shape());
      map[n->output(i)] = copy->output(i);
      fresh_.insert(copy->output(i));
    }
  }
  std::vector<Value*> outs;
  for (const Value* v : sub.outputs()) outs.push_back(lookup(v));
  return outs;
}

Node* Splicer::add(const std::string& op, const std::vector<Value*>& ins, DType t, const Shape& s, Attributes attrs) {
  Node* n = g_.createNode(op, ins, 1, uniqueNodeName(root_.name() + "/" + op));
  n->attrs() = std::move(attrs);
  n->moveBefore(&root_);
  n->output()->setType(t, s);
  fresh_.insert(n->output());
  return n;
}

void Splicer::finish(const std::vector<Value*>& repl) {
  std::vector<std::pair<Value*, std::string>> renames;
  std::unordered_set<Value*> claimed;
  for (size_t i = 0; i < root_.numOutputs(); ++i) {
    Value* old = root_.output(i);
    Value* r = repl.at(i);
    if (old->isGraphOutput()) {
      if (!fresh_.count(r) || r->isGraphOutput() || claimed.count(r)) {
        r = add("Identity", {r}, r->dtype(), r->shape())->output();
      }
      claimed.insert(r);
      renames.emplace_back(r, old->name());
    }
    old->replaceAllUsesWith(r);
  }
  std::vector<Value*> inputs = root_.inputs();
  g_.eraseNode(&root_);
  for (Value* v : inputs) {
    if (v) g_.eraseIfUnusedConstant(v);
  }
  for (auto& [v, name] : renames) v->setName(name);
}

std::string Splicer::uniqueNodeName(const std::string& base) {
  std::string name = base;
  for (int k = 1; g_.findNode(name) || used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

Value* stackSteps(Splicer& sp, const std::vector<Value*>& steps, int64_t axis, const std::string& hint) {
  std::vector<Value*> parts;
  const Tensor axes = Tensor::fromVector(std::vector<int64_t>{axis}, {1});
  Value* axes_c = sp.constant(axes, hint + "_axes");
  for (Value* v : steps) {
    Shape s = v->shape();
    s.insert(s.begin() + axis, 1);
    parts.push_back(sp.add("Unsqueeze", {v, axes_c}, v->dtype(), s)->output());
  }
  Shape out = parts[0]->shape();
  out[axis] = static_cast<int64_t>(steps.size());
  Attributes a;
  a.set("axis", axis);
  return sp.add("Concat", parts, steps[0]->dtype(), out, a)->output();
}

}  // namespace npuc
