#include "target/fusion_groups.h"

#include <algorithm>
#include <set>

namespace npuc {

std::vector<const Node*> FusionGroup::nodes() const {
  std::vector<const Node*> out = {anchor};
  if (activation) out.push_back(activation);
  if (add) out.push_back(add);
  return out;
}

std::string FusionGroup::pattern() const {
  std::string out;
  for (const Node* n : nodes()) out += (out.empty() ? "" : "+") + n->opType();
  return out;
}

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The single NPU reader of `n`'s output, when that output stays inside a fused task.
const Node* soleNpuReader(const Node& n, const PartitionReport& placement,
                          const std::set<const Node*>& taken) {
  const Value* out = n.output(0);
  if (n.numOutputs() != 1 || out->isGraphOutput() || out->uses().size() != 1) return nullptr;
  const Node* reader = out->uses()[0].user;
  if (taken.count(reader) || placement.deviceOf(reader) != Device::Npu) return nullptr;
  return reader;
}

// The residual Add: reads `tail`'s output as one operand and a different same-shaped tensor.
bool isResidualAdd(const Node& add, const Node& tail) {
  if (add.opType() != "Add" || add.numInputs() != 2) return false;
  const Value* mine = tail.output(0);
  const Value* other = add.input(0) == mine ? add.input(1) : add.input(0);
  return other && other != mine && other->shape() == mine->shape() && add.output(0)->shape() == mine->shape();
}

const FusionRule* ruleFor(const Node& anchor, const SocProfile& soc) {
  for (const FusionRule& r : soc.fusion)
    if (contains(r.anchors, anchor.opType())) return &r;
  return nullptr;
}

}  // namespace

std::vector<FusionGroup> fusionGroups(const Graph& graph, const SocProfile& soc,
                                      const PartitionReport& placement) {
  std::vector<FusionGroup> groups;
  std::set<const Node*> taken;
  for (const Node* n : graph.nodes()) {
    const FusionRule* rule = ruleFor(*n, soc);
    if (!rule || taken.count(n) || placement.deviceOf(n) != Device::Npu) continue;
    FusionGroup g;
    g.anchor = n;
    const Node* tail = n;
    const Node* next = soleNpuReader(*tail, placement, taken);
    if (next && contains(rule->activations, next->opType()) && next->input(0) == tail->output(0)) {
      g.activation = next;
      tail = next;
      next = soleNpuReader(*tail, placement, taken);
    }
    if (rule->residual_add && next && isResidualAdd(*next, *tail)) g.add = next;
    if (!g.activation && !g.add) continue;
    for (const Node* m : g.nodes()) taken.insert(m);
    groups.push_back(g);
  }
  return groups;
}

}  // namespace npuc
