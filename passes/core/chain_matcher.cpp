#include "passes/core/chain_matcher.h"

namespace npuc {

namespace {

std::string tag(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

std::string quoted(const Value& v) {
  return "'" + v.name() + "'";
}

const char* stepName(ChainStep step) {
  return step == ChainStep::Activation ? "activation" : "residual Add";
}

// The only reader of `tail`'s output when that output can stay inside the fused kernel; else null
// with the reason in *why.
Node* soleReader(const Node& tail, const ChainSpec& spec, std::string* why) {
  if (tail.numOutputs() != 1) {
    *why = tag(tail) + " has " + std::to_string(tail.numOutputs()) + " outputs";
    return nullptr;
  }
  const Value& out = *tail.output(0);
  *why = m::interiorUseProblem(out);
  if (why->empty() && out.uses().empty()) *why = quoted(out) + " has no reader";
  if (!why->empty()) return nullptr;
  Node* reader = out.uses()[0].user;
  if (spec.absorbable && !spec.absorbable(*reader)) {
    *why = tag(*reader) + " is not " + spec.absorbable_what;
    return nullptr;
  }
  return reader;
}

// Empty if `node` can be the chain's activation after `chain_value`, else why not.
std::string refuseActivation(Node& node, const Value& chain_value, const ChainSpec& spec) {
  m::MatchState st;
  if (!spec.activation.matchNode(node, st)) return st.reason();
  // A Clip whose bound is the chain value reads it, but does not activate it.
  if (node.input(0) != &chain_value)
    return tag(node) + " does not read " + quoted(chain_value) + " as input 0";
  return std::string();
}

bool sameTensor(const Value& a, const Value& b, bool same_dtype) {
  if (!same_dtype) return a.shape() == b.shape();
  return a.dtype() == b.dtype() && a.hasShape() && b.hasShape() && a.shape() == b.shape();
}

// Empty if `node` is a residual Add of `chain_value` (and sets *residual to its other operand), else
// why not.
std::string refuseResidualAdd(Node& node, const Value& chain_value, const ChainSpec& spec, Value** residual) {
  Value *a = nullptr, *b = nullptr;
  auto two_inputs = [](const Node& n) { return n.numInputs() == 2; };
  auto pattern = m::op("Add", m::any(&a), m::any(&b)).where(two_inputs, "exactly two inputs");
  m::MatchState st;
  if (!pattern.matchNode(node, st)) return st.reason();
  Value* other = a == &chain_value ? b : a;
  if (other == &chain_value) return tag(node) + " adds " + quoted(chain_value) + " to itself";
  // Same shapes only: the fused add is elementwise, without broadcasting.
  if (!sameTensor(*other, chain_value, spec.residual_same_dtype)) {
    return tag(node) + ": " + quoted(*other) + " is not a tensor like " + quoted(chain_value);
  }
  if (!sameTensor(*node.output(0), chain_value, spec.residual_same_dtype)) {
    return tag(node) + ": the sum is not a tensor like " + quoted(chain_value);
  }
  *residual = other;
  return std::string();
}

}  // namespace

FusionChain matchFusionChain(Node& anchor, const ChainSpec& spec) {
  FusionChain chain;
  chain.anchor = &anchor;
  chain.tail = &anchor;
  std::string why_stopped;
  Node* next = soleReader(anchor, spec, &why_stopped);
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const ChainStep step = spec.steps[i];
    if (!next) {
      chain.refusals.push_back("no " + std::string(stepName(step)) + ": " + why_stopped);
      break;
    }
    Value* residual = nullptr;
    const Value& chain_value = *chain.tail->output(0);
    const std::string refusal = step == ChainStep::Activation
                                    ? refuseActivation(*next, chain_value, spec)
                                    : refuseResidualAdd(*next, chain_value, spec, &residual);
    if (!refusal.empty()) {
      // Not this step: the same reader may still be the next step's node.
      chain.refusals.push_back(std::string(stepName(step)) + " refused: " + refusal);
      continue;
    }
    (step == ChainStep::Activation ? chain.activation : chain.add) = next;
    if (residual) chain.residual = residual;
    chain.tail = next;
    next = soleReader(*next, spec, &why_stopped);
  }
  return chain;
}

}  // namespace npuc
