// NPU/CPU partitioning: which device runs each node of a graph on a given SoC, and why.
//
// Placement rule, in order:
//   1. A user op_target entry for the node's name, else for its op type, decides ("cpu" or "npu").
//      Forcing "npu" onto a node whose NPU checks fail is refused (ConfigError naming the check).
//   2. Otherwise a node goes to the NPU when every check of op_constraints.h passes, else to the CPU.
//   3. Hand-over reduction: data-movement nodes (Reshape, Transpose, Concat, ...; no arithmetic,
//      so they cost the CPU little and are low-efficiency on the NPU anyway) left on the NPU between
//      CPU nodes move to the CPU when that lowers the number of NPU<->CPU hand-overs. A connected
//      group of them (Transpose -> Reshape) is tried as a whole first, then node by node. Each move
//      strictly lowers the count, so repeating until nothing moves terminates. Compute nodes are
//      never moved off the NPU: that would trade NPU MACs for a (far slower) CPU to save a copy.
//
// A hand-over is one tensor crossing devices: a value produced on one device and read on the
// other counts once per reading device, however many nodes there read it. Graph inputs and outputs
// live on the host and are not counted (every placement pays for them alike).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "target/soc_profile.h"

namespace npuc {

enum class Device { Npu, Cpu };
const char* deviceName(Device d);  // "NPU" / "CPU"

enum class PlacementReason {
  NpuSupported,    // on the NPU: every check passed
  ForcedNpu,       // on the NPU because the user asked (and the checks pass)
  UnsupportedOp,   // the NPU does not run this op type at all
  LimitViolated,   // the op is supported, but this node breaks a limit (detail says which)
  ForcedCpu,       // the user's op_target put it on the CPU
  FewerHandovers,  // a data-movement node moved to the CPU to remove hand-overs
};
const char* placementReasonName(PlacementReason r);

struct NodePlacement {
  const Node* node = nullptr;
  std::string label;  // node name, or "<op>#<index>" for unnamed nodes
  Device device = Device::Npu;
  PlacementReason reason = PlacementReason::NpuSupported;
  std::string detail;              // the violated checks' messages, for CPU placements
  bool cpu_runtime_lacks = false;  // on the CPU, but the SoC's CPU runtime does not list the op
  int64_t macs = 0;
};

// {node name or op type -> "cpu" | "npu"}; a node-name entry wins over an op-type entry.
using OpTargetMap = std::map<std::string, std::string>;
// The user's op_target entry for `n` (its name first, then its op type), or null.
const std::pair<const std::string, std::string>* userOpTargetEntry(const Node& n, const OpTargetMap& op_target);

struct PartitionReport {
  std::string soc;
  std::vector<NodePlacement> nodes;  // topological order
  size_t handovers = 0;
  size_t npu_segments = 0;  // connected groups of NPU nodes
  size_t cpu_segments = 0;
  int64_t npu_macs = 0;
  int64_t total_macs = 0;
  std::vector<std::string> warnings;
  // Where each node sits in `nodes`, filled by partitionGraph: deviceOf is then a lookup, not a
  // scan (every lowering, planning and costing step asks it once per node or per use).
  std::unordered_map<const Node*, size_t> position;

  size_t count(Device d) const;
  // Fraction of MACs that run on the NPU (1 for a graph without MAC-bound ops).
  double npuMacShare() const;
  const NodePlacement* find(const std::string& label) const;
  // The placement of `node` (GraphError if the report does not hold it); a lookup through
  // `position` when partitionGraph filled it.
  const NodePlacement& placementOf(const Node* node) const;
  Device deviceOf(const Node* node) const { return placementOf(node).device; }
  // A readable summary: totals, then every CPU node with its reason, then warnings.
  std::string toText() const;
};

// Places every node of `graph` (static shapes expected). Throws ConfigError for a bad op_target
// value or an op_target "npu" the NPU cannot honour.
PartitionReport partitionGraph(const Graph& graph, const SocProfile& soc, const OpTargetMap& op_target = {});

// NPU<->CPU hand-overs of a placement (see the header comment for what counts).
size_t countHandovers(const Graph& graph, const std::map<const Node*, Device>& placement);

}  // namespace npuc
