// The fusion chain matcher: which nodes after an anchor (Conv, Gemm, ...) one fused kernel can absorb.
//
// A chain is the anchor, then optional steps in a fixed order, each at most once: an activation and a
// residual Add (of a same-shaped tensor). Two users share it so they cannot drift apart:
//   * host fusion (cpp/runtime/host_fusion.cpp): Conv -> [Add] -> [activation] becomes one oneDNN
//     convolution with a sum and an eltwise post-op (oneDNN applies them in that order);
//   * NPU fusion groups (cpp/target/fusion_groups.cpp): anchor -> [activation] -> [Add] runs as one NPU
//     task, as the SoC profile's fusion rule allows.
//
// A step's candidate is the sole reader of the chain's current value; the value must have no other
// reader and not be a graph output, because a fused kernel never writes it out. A candidate a step
// refuses is offered to the next step; a refusal's reason is kept (like notifyMatchFailure) so a
// caller can say why a chain stopped where it did.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/matcher.h"

namespace npuc {

enum class ChainStep {
  // A node the activation pattern accepts, reading the chain value as its input 0.
  Activation,
  // An Add of the chain value and another tensor of the same shape (no broadcasting).
  ResidualAdd,
};

struct ChainSpec {
  explicit ChainSpec(m::OpPattern activation_pattern) : activation(std::move(activation_pattern)) {}

  // The steps that may follow the anchor, in the order the fused kernel applies them.
  std::vector<ChainStep> steps;
  // The ops that may be the activation (an SoC rule's list, the host's trait); only the node itself is
  // matched, its input 0 is checked by the chain matcher.
  m::OpPattern activation;
  // The residual operand and the Add's result must have the chain value's shape; with this set also its
  // dtype, and the shapes must be known (the host's sum post-op neither broadcasts nor converts).
  bool residual_same_dtype = false;
  // Whether a node may join the chain at all (the NPU's placement, not in an earlier group); null:
  // any node. `absorbable_what` names the condition in refusal reasons.
  m::NodePredicate absorbable;
  std::string absorbable_what = "absorbable";
};

struct FusionChain {
  Node* anchor = nullptr;
  Node* activation = nullptr;  // null: none absorbed
  Node* add = nullptr;         // null: none absorbed
  Value* residual = nullptr;   // the Add operand that is not the chain value
  Node* tail = nullptr;        // the last node of the chain: its output is the chain's output
  // Why each candidate was refused or why the chain stopped, in matching order.
  std::vector<std::string> refusals;

  // True when at least one node follows the anchor (a chain of one node fuses nothing).
  bool fusesAnything() const { return activation || add; }
};

// Matches the chain that starts at `anchor`; the caller has decided that `anchor` is one.
FusionChain matchFusionChain(Node& anchor, const ChainSpec& spec);

}  // namespace npuc
