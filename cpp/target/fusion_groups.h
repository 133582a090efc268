// Fusion grouping: which NPU nodes run together as one NPU task, per the profile's fusion rules.
// A group is an anchor (Conv, or Gemm/MatMul where the profile allows), optionally followed by one
// activation the rule lists, optionally followed (when the rule has residual_add) by an Add of a
// same-shaped tensor. The graph is not changed; lowering and the cost model read the groups.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc {

struct FusionGroup {
  const Node* anchor = nullptr;
  const Node* activation = nullptr;  // null: none fused
  const Node* add = nullptr;         // null: none fused
  std::vector<const Node*> nodes() const;
  // "Conv+Relu+Add"
  std::string pattern() const;
};

// Groups of two or more NPU nodes in topological order of their anchors; every node is in at most
// one group. A node is only absorbed when it is on the NPU and the value it reads from the group
// has no other reader and is not a graph output (that value never leaves the NPU task).
std::vector<FusionGroup> fusionGroups(const Graph& graph, const SocProfile& soc,
                                      const PartitionReport& placement);

}  // namespace npuc
