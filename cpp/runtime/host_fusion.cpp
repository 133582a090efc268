#include "runtime/host_fusion.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>

#include "opset/op_traits.h"

namespace npuc {

namespace {

constexpr const char* kConvActOp = "ConvAct";
// Input slots of ConvAct: X, W, [B], [Sum].
constexpr size_t kConvActBiasSlot = 2;
constexpr size_t kConvActSumSlot = 3;

// An activation folded into ConvAct: its name (the ONNX op type) and up to two parameters.
struct Activation {
  std::string name;
  float alpha = 0.0f;
  float beta = 0.0f;
};

bool isOnnxOp(const Node* n, const char* op) {
  return n && n->domain().empty() && n->opType() == op;
}

// The value has exactly one consumer and is not a graph output, so folding its producer into the
// consumer removes it without anybody noticing.
bool isPrivateIntermediate(const Value* v) {
  return v->uses().size() == 1 && !v->isGraphOutput();
}

Node* soleUser(const Value* v) {
  return isPrivateIntermediate(v) ? v->uses()[0].user : nullptr;
}

// A float scalar constant input (or `def` if the optional input is absent); nullopt if the input
// exists but is not a constant scalar.
std::optional<float> scalarConstInput(const Node* n, size_t i, float def) {
  const Value* v = n->input(i);
  if (!v) return def;
  if (!v->isConstant() || v->constant().numel() != 1 || !isFloating(v->constant().dtype()))
    return std::nullopt;
  return static_cast<float>(v->constant().doubleAt(0));
}

// Describes `n` as a fusable activation (OpTrait::HostFusableActivation), or nullopt if it is
// not one. LeakyRelu and Clip carry their parameters; the others have none.
std::optional<Activation> asActivation(const Node* n) {
  if (!n || !n->domain().empty() || !opTraits(*n).has(OpTrait::HostFusableActivation)) return std::nullopt;
  const std::string& op = n->opType();
  if (op == "LeakyRelu") return Activation{op, n->attrs().f("alpha", 0.01f)};
  if (op == "Clip") {
    // Absent bounds are the widest finite floats (oneDNN's clip takes finite bounds).
    auto lo = scalarConstInput(n, 1, std::numeric_limits<float>::lowest());
    auto hi = scalarConstInput(n, 2, std::numeric_limits<float>::max());
    if (!lo || !hi) return std::nullopt;
    return Activation{op, *lo, *hi};
  }
  return Activation{op};
}

bool sameType(const Value* a, const Value* b) {
  return a->dtype() == b->dtype() && a->hasShape() && b->hasShape() && a->shape() == b->shape();
}

// The matched chain: conv -> [add] -> [act]. `last` is the node whose output the fused node takes.
struct ConvChain {
  Node* conv = nullptr;
  Node* add = nullptr;
  Value* sum = nullptr;  // the Add operand that is not the conv output
  Node* act = nullptr;
  Activation activation;
  Node* last() const { return act ? act : add ? add : conv; }
};

std::optional<ConvChain> matchChain(Node* conv) {
  if (!isOnnxOp(conv, "Conv") || conv->numOutputs() != 1 || conv->output()->dtype() != DType::Float32) {
    return std::nullopt;
  }
  ConvChain chain;
  chain.conv = conv;
  Value* cur = conv->output();
  Node* next = soleUser(cur);
  if (isOnnxOp(next, "Add") && next->numInputs() == 2) {
    Value* other = next->input(0) == cur ? next->input(1) : next->input(0);
    // Same shape only: the post-op sum adds elementwise without broadcasting.
    if (other && other != cur && sameType(other, cur) && sameType(next->output(), cur)) {
      chain.add = next;
      chain.sum = other;
      cur = next->output();
      next = soleUser(cur);
    }
  }
  if (auto act = asActivation(next)) {
    chain.act = next;
    chain.activation = *act;
  }
  if (!chain.add && !chain.act) return std::nullopt;
  return chain;
}

void rewriteChain(Graph& graph, const ConvChain& c) {
  Node* last = c.last();
  Node* fused = graph.insertNodeBefore(last, kConvActOp, {c.conv->input(0), c.conv->input(1)}, 1,
                                       c.conv->name().empty() ? "" : c.conv->name() + "_act");
  fused->setDomain(kNpucDomain);
  if (c.conv->hasInput(kConvActBiasSlot)) fused->setInput(kConvActBiasSlot, c.conv->input(kConvActBiasSlot));
  if (c.sum) fused->setInput(kConvActSumSlot, c.sum);
  fused->attrs() = c.conv->attrs();
  fused->attrs().set("activation", c.activation.name);
  fused->attrs().set("act_alpha", c.activation.alpha);
  fused->attrs().set("act_beta", c.activation.beta);
  Value* out = last->output();
  // The fused output takes the name of the chain's output, which users and dumps know.
  const std::string name = out->name();
  fused->output()->setType(out->dtype(), out->shape());
  out->replaceAllUsesWith(fused->output());
  // Erase from the end of the chain so each erased node's outputs are unused by then.
  if (c.act) graph.eraseNode(c.act);
  if (c.add) graph.eraseNode(c.add);
  graph.eraseNode(c.conv);
  if (fused->output()->name() != name) fused->output()->setName(name);
}

}  // namespace

bool hostFusionEnabledByEnv() {
  const char* v = std::getenv(kHostFusionEnvVar);
  if (!v) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "false");
}

size_t fuseConvActivations(Graph& graph, const OpRegistry& registry) {
  if (!registry.find(kConvActOp, kNpucDomain)) return 0;
  // Match and rewrite one chain at a time so a later match sees the graph as rewritten so far
  // (a residual Add may read the output of an earlier fused chain). Rewriting erases nodes after
  // the Conv, so walk a snapshot and skip what has been erased.
  std::unordered_set<const Node*> erased;
  size_t fused = 0;
  for (Node* n : graph.nodeList()) {
    if (erased.count(n)) continue;
    auto chain = matchChain(n);
    if (!chain) continue;
    for (const Node* gone : {chain->conv, chain->add, chain->act}) {
      if (gone) erased.insert(gone);
    }
    rewriteChain(graph, *chain);
    ++fused;
  }
  if (fused) graph.removeUnusedValues();  // Clip bounds and other constants left without users
  return fused;
}

}  // namespace npuc
