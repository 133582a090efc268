// common_subexpression_elimination: computes each distinct expression once. Two nodes are the same
// expression when they have the same op, domain and attributes and the same inputs, constants
// being compared by value (passes/core/equivalence.h, shared with extract_common_factor). Equal
// constants are merged first so later comparisons are pointer comparisons. Ops that are not
// deterministic (schema not foldable, e.g. random generators) are never merged.
#include <unordered_map>

#include "opset/registry.h"
#include "passes/core/equivalence.h"
#include "passes/core/pass.h"
#include "passes/core/rewriter.h"

namespace npuc {
namespace {

size_t mergeEqualConstants(Graph& graph, Rewriter& rw) {
  std::unordered_multimap<size_t, Value*> seen;
  size_t merged = 0;
  for (Value* v : graph.values()) {
    if (!v->isConstant() || !v->hasUses() || v->isGraphOutput()) continue;
    const size_t h = tensorFingerprint(v->constant());
    auto [first, last] = seen.equal_range(h);
    Value* rep = nullptr;
    for (auto it = first; it != last && !rep; ++it) {
      if (it->second->constant().bitwiseEqual(v->constant())) rep = it->second;
    }
    if (!rep) {
      seen.emplace(h, v);
      continue;
    }
    rw.replaceValue(v, rep);
    ++merged;
  }
  return merged;
}

size_t nodeKey(const Node& n) {
  size_t h = std::hash<std::string>()(n.opType());
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(n.attrs().all().size());
  for (const Value* in : n.inputs()) {
    mix(in && in->isConstant() ? tensorFingerprint(in->constant()) : std::hash<const Value*>()(in));
  }
  return h;
}

bool isDeterministic(const Node& n) {
  const OpSchema* s = OpRegistry::instance().find(n);
  return s == nullptr || s->foldable;  // unknown ops: the importer has refused them already
}

bool outputsReplaceable(const Node& dup, const Node& rep, const Rewriter& rw) {
  for (size_t i = 0; i < dup.numOutputs(); ++i) {
    if (!rw.canReplace(*dup.output(i), *rep.output(i))) return false;
  }
  return true;
}

class CommonSubexpressionEliminationPass : public Pass {
 public:
  const char* name() const override { return "common_subexpression_elimination"; }
  const char* description() const override { return "computes identical expressions once"; }

  size_t run(Graph& graph, PassContext& ctx) override {
    Rewriter rw(graph, ctx);
    rw.setCurrentPattern("cse");
    size_t changes = mergeEqualConstants(graph, rw);
    std::unordered_multimap<size_t, Node*> table;
    for (Node* n : graph.nodes()) {
      if (n->numInputs() == 0 || !isDeterministic(*n)) continue;
      const size_t key = nodeKey(*n);
      auto [first, last] = table.equal_range(key);
      Node* rep = nullptr;
      for (auto it = first; it != last && !rep; ++it) {
        if (equivalentNodes(*it->second, *n)) rep = it->second;
      }
      if (!rep) {
        table.emplace(key, n);
        continue;
      }
      if (!outputsReplaceable(*n, *rep, rw)) {
        rw.recordMatchFailure(*n, "duplicate of '" + rep->name() + "', but both results are graph outputs");
        continue;
      }
      // `rep` precedes `n`, so every user of n's outputs comes after rep: order stays valid.
      rw.replaceOp(n, rep->outputs());
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionEliminationPass>();
}

}  // namespace npuc
