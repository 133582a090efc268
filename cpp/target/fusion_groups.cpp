#include "target/fusion_groups.h"

#include <algorithm>
#include <set>

#include "passes/core/chain_matcher.h"

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

const FusionRule* ruleFor(const Node& anchor, const SocProfile& soc) {
  for (const FusionRule& r : soc.fusion)
    if (contains(r.anchors, anchor.opType())) return &r;
  return nullptr;
}

// The chain `rule` lets follow its anchor: one listed activation, then (residual_add) an Add. Only
// NPU nodes outside earlier groups join.
ChainSpec chainSpec(const FusionRule& rule, const PartitionReport& placement,
                    const std::set<const Node*>& taken) {
  // The profile lists op types by name, ONNX's Relu next to npuc's SiLU: any domain.
  ChainSpec spec(m::oneOf(rule.activations).anyDomain());
  spec.steps = {ChainStep::Activation};
  if (rule.residual_add) spec.steps.push_back(ChainStep::ResidualAdd);
  spec.absorbable = [&placement, &taken](const Node& n) {
    return !taken.count(&n) && placement.deviceOf(&n) == Device::Npu;
  };
  spec.absorbable_what = "an NPU node outside earlier groups";
  return spec;
}

}  // namespace

std::vector<FusionGroup> fusionGroups(const Graph& graph, const SocProfile& soc,
                                      const PartitionReport& placement) {
  std::vector<FusionGroup> groups;
  std::set<const Node*> taken;
  std::vector<ChainSpec> specs;  // one per rule, in the profile's order
  for (const FusionRule& r : soc.fusion) specs.push_back(chainSpec(r, placement, taken));
  for (Node* n : graph.nodes()) {
    const FusionRule* rule = ruleFor(*n, soc);
    if (!rule || taken.count(n) || placement.deviceOf(n) != Device::Npu) continue;
    const FusionChain chain = matchFusionChain(*n, specs[rule - soc.fusion.data()]);
    if (!chain.fusesAnything()) continue;
    FusionGroup g;
    g.anchor = chain.anchor;
    g.activation = chain.activation;
    g.add = chain.add;
    for (const Node* member : g.nodes()) taken.insert(member);
    groups.push_back(g);
  }
  return groups;
}

}  // namespace npuc
