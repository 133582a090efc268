#include "runtime/host_fusion.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>

#include "opset/op_traits.h"
#include "passes/core/chain_matcher.h"
#include "passes/core/pass_manager.h"

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

// A float scalar constant input (or `def` if the optional input is absent); nullopt if the input
// exists but is not a constant scalar.
std::optional<float> scalarConstInput(const Node& n, size_t i, float def) {
  const Value* v = n.input(i);
  if (!v) return def;
  if (!v->isConstant() || v->constant().numel() != 1 || !isFloating(v->constant().dtype()))
    return std::nullopt;
  return static_cast<float>(v->constant().doubleAt(0));
}

// Absent bounds are the widest finite floats (oneDNN's clip takes finite bounds).
std::optional<float> clipLow(const Node& n) {
  return scalarConstInput(n, 1, std::numeric_limits<float>::lowest());
}
std::optional<float> clipHigh(const Node& n) {
  return scalarConstInput(n, 2, std::numeric_limits<float>::max());
}

// oneDNN's eltwise post-op takes its parameters as numbers, so Clip's bounds must be constants.
bool hasConstantParameters(const Node& n) {
  return n.opType() != "Clip" || (clipLow(n) && clipHigh(n));
}

// The parameters of a matched activation: LeakyRelu and Clip carry theirs, the others have none.
Activation describeActivation(const Node& n) {
  const std::string& op = n.opType();
  if (op == "LeakyRelu") return Activation{op, n.attrs().f("alpha", 0.01f)};
  if (op == "Clip") return Activation{op, *clipLow(n), *clipHigh(n)};
  return Activation{op};
}

// The Conv a ConvAct replaces: the host kernel is an FP32 oneDNN convolution with one output.
const m::OpPattern& convAnchor() {
  static const m::OpPattern pattern =
      m::op("Conv")
          .where([](const Node& n) { return n.numOutputs() == 1; }, "one output")
          .where([](const Node& n) { return n.output()->dtype() == DType::Float32; }, "an FP32 output");
  return pattern;
}

// oneDNN applies the sum post-op before the eltwise one: Conv -> [Add] -> [activation]. The sum
// neither broadcasts nor converts, so the residual must be the conv output's exact type.
const ChainSpec& hostChain() {
  static const ChainSpec spec = [] {
    auto is_onnx = [](const Node& n) { return n.domain().empty(); };
    ChainSpec s(m::trait(OpTrait::HostFusableActivation)
                    .where(is_onnx, "the ONNX domain")
                    .where(hasConstantParameters, "constant scalar float parameters"));
    s.steps = {ChainStep::ResidualAdd, ChainStep::Activation};
    s.residual_same_dtype = true;
    return s;
  }();
  return spec;
}

// The matched chain and the activation's parameters for ConvAct's attributes.
struct ConvChain {
  FusionChain nodes;
  Activation activation;
};

std::optional<ConvChain> matchChain(Node& conv) {
  m::MatchState st;
  if (!convAnchor().matchNode(conv, st)) return std::nullopt;
  ConvChain chain{matchFusionChain(conv, hostChain()), Activation{}};
  if (!chain.nodes.fusesAnything()) return std::nullopt;
  if (chain.nodes.activation) chain.activation = describeActivation(*chain.nodes.activation);
  return chain;
}

void rewriteChain(Graph& graph, const ConvChain& chain) {
  const FusionChain& c = chain.nodes;
  Node* last = c.tail;
  Node* fused = graph.insertNodeBefore(last, kConvActOp, {c.anchor->input(0), c.anchor->input(1)}, 1,
                                       c.anchor->name().empty() ? "" : c.anchor->name() + "_act");
  fused->setDomain(kNpucDomain);
  if (c.anchor->hasInput(kConvActBiasSlot))
    fused->setInput(kConvActBiasSlot, c.anchor->input(kConvActBiasSlot));
  if (c.residual) fused->setInput(kConvActSumSlot, c.residual);
  fused->attrs() = c.anchor->attrs();
  fused->attrs().set("activation", chain.activation.name);
  fused->attrs().set("act_alpha", chain.activation.alpha);
  fused->attrs().set("act_beta", chain.activation.beta);
  Value* out = last->output();
  // The fused output takes the name of the chain's output, which users and dumps know.
  const std::string name = out->name();
  fused->output()->setType(out->dtype(), out->shape());
  out->replaceAllUsesWith(fused->output());
  // Erase from the end of the chain so each erased node's outputs are unused by then.
  if (c.activation) graph.eraseNode(c.activation);
  if (c.add) graph.eraseNode(c.add);
  graph.eraseNode(c.anchor);
  if (fused->output()->name() != name) fused->output()->setName(name);
}

}  // namespace

bool hostFusionEnabledByEnv() {
  const char* v = std::getenv(kHostFusionEnvVar);
  if (!v) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "false");
}

const std::vector<std::string>& hostSimplifyPasses() {
  static const std::vector<std::string> kPasses{"canonicalize", "fold_batchnorm", "fuse_activations",
                                                "fuse_hardsigmoid"};
  return kPasses;
}

size_t simplifyForHost(Graph& graph) {
  PassManagerOptions options;
  options.record_match_failures = false;  // nobody reads the report
  PassManager pm(std::move(options));
  pm.addStage("host", hostSimplifyPasses());
  const OptimizationReport report = pm.run(graph);
  size_t rewrites = 0;
  for (const PassFiring& f : report.fired) rewrites += f.changes;
  return rewrites;
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
    auto chain = matchChain(*n);
    if (!chain) continue;
    for (const Node* gone : {chain->nodes.anchor, chain->nodes.add, chain->nodes.activation}) {
      if (gone) erased.insert(gone);
    }
    rewriteChain(graph, *chain);
    ++fused;
  }
  if (fused) graph.removeUnusedValues();  // Clip bounds and other constants left without users
  return fused;
}

}  // namespace npuc
