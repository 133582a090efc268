#include "target/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>

#include "common/error.h"
#include "opset/op_traits.h"
#include "target/op_constraints.h"
#include "target/op_geometry.h"

namespace npuc {

const char* deviceName(Device d) {
  return d == Device::Npu ? "NPU" : "CPU";
}

const char* placementReasonName(PlacementReason r) {
  switch (r) {
    case PlacementReason::NpuSupported: return "supported";
    case PlacementReason::ForcedNpu: return "forced by user";
    case PlacementReason::UnsupportedOp: return "unsupported op";
    case PlacementReason::LimitViolated: return "limit violated";
    case PlacementReason::ForcedCpu: return "forced by user";
    case PlacementReason::FewerHandovers: return "fewer hand-overs";
  }
  return "?";
}

const std::pair<const std::string, std::string>* userOpTargetEntry(const Node& n, const OpTargetMap& op_target) {
  auto it = n.name().empty() ? op_target.end() : op_target.find(n.name());
  if (it == op_target.end()) it = op_target.find(n.opType());
  return it == op_target.end() ? nullptr : &*it;
}

namespace {

using Placement = std::map<const Node*, Device>;

std::string nodeLabel(const Node& n, size_t index) {
  return n.name().empty() ? n.opType() + "#" + std::to_string(index) : n.name();
}

Device parseTargetValue(const std::string& key, const std::string& value) {
  if (value == "npu" || value == "NPU") return Device::Npu;
  if (value == "cpu" || value == "CPU") return Device::Cpu;
  throw ConfigError("op_target['" + key + "']: expected \"cpu\" or \"npu\", got '" + value + "'");
}

std::string violationsText(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) out += (out.empty() ? "" : "; ") + v.message;
  return out;
}

// Steps 1 and 2 of the placement rule for one node.
NodePlacement placeNode(const Node& n, size_t index, const SocProfile& soc, const OpTargetMap& op_target) {
  NodePlacement p;
  p.node = &n;
  p.label = nodeLabel(n, index);
  std::vector<Violation> violations = npuViolations(n, soc);
  const auto* entry = userOpTargetEntry(n, op_target);
  std::optional<Device> forced;
  if (entry) forced = parseTargetValue(entry->first, entry->second);
  if (forced == Device::Cpu) {
    p.device = Device::Cpu;
    p.reason = PlacementReason::ForcedCpu;
    p.detail = "op_target['" + entry->first + "'] = cpu";
  } else if (violations.empty()) {
    p.device = Device::Npu;
    p.reason = forced ? PlacementReason::ForcedNpu : PlacementReason::NpuSupported;
  } else if (forced == Device::Npu) {
    throw ConfigError(fmt::format(
        "op_target['{}'] = npu: node '{}' ({}) cannot run on the {} NPU: check {} fails: {}", entry->first,
        p.label, n.opType(), soc.name, violations.front().check, violationsText(violations)));
  } else {
    p.device = Device::Cpu;
    p.reason =
        violations.front().unsupported_op ? PlacementReason::UnsupportedOp : PlacementReason::LimitViolated;
    p.detail = violationsText(violations);
  }
  return p;
}

// 1 if `v` is produced on one device and read on the other, else 0. With two devices a value
// crosses at most once (all readers on the other device share one transfer).
size_t valueHandovers(const Value* v, const Placement& placement) {
  const Node* producer = v->producer();
  if (!producer) return 0;  // graph input or constant: host data, not a hand-over
  Device src = placement.at(producer);
  for (const Use& u : v->uses())
    if (placement.at(u.user) != src) return 1;
  return 0;
}

// Hand-overs on the values the given nodes read or write: the only ones flipping them can change.
size_t handoversAround(const std::vector<NodePlacement*>& group, const Placement& placement) {
  std::set<const Value*> values;
  for (const NodePlacement* p : group) {
    values.insert(p->node->outputs().begin(), p->node->outputs().end());
    for (const Value* v : p->node->inputs())
      if (v) values.insert(v);
  }
  size_t total = 0;
  for (const Value* v : values) total += valueHandovers(v, placement);
  return total;
}

// Ops that only move or reshape data are cheap on the CPU and low-efficiency on the NPU
// (DESIGN.md), hence the only ones the partitioner moves to the CPU to save hand-overs.
bool movableToCpu(const NodePlacement& p, const SocProfile& soc) {
  return p.device == Device::Npu && p.reason != PlacementReason::ForcedNpu &&
         opTraits(*p.node).has(OpTrait::DataMovement) && soc.cpu.supportsOp(p.node->opType());
}

// Groups of movable nodes connected through producer->consumer edges, so that a chain of data
// movement (Transpose -> Reshape) between CPU ops can move as a whole: moving either node alone
// would not lower the count.
std::vector<std::vector<NodePlacement*>> movableGroups(std::vector<NodePlacement>& nodes,
                                                       const SocProfile& soc) {
  std::map<const Node*, size_t> group_of;
  std::vector<std::vector<NodePlacement*>> groups;
  for (NodePlacement& p : nodes) {  // topological order: producers are grouped before consumers
    if (!movableToCpu(p, soc)) continue;
    std::optional<size_t> g;
    for (const Value* v : p.node->inputs()) {
      auto it = v && v->producer() ? group_of.find(v->producer()) : group_of.end();
      if (it == group_of.end()) continue;
      if (!g) {
        g = it->second;
      } else if (*g != it->second) {  // p joins two groups: merge the later into the earlier
        size_t from = it->second;
        for (NodePlacement* q : groups[from]) group_of[q->node] = *g;
        groups[*g].insert(groups[*g].end(), groups[from].begin(), groups[from].end());
        groups[from].clear();
      }
    }
    if (!g) {
      g = groups.size();
      groups.emplace_back();
    }
    group_of[p.node] = *g;
    groups[*g].push_back(&p);
  }
  return groups;
}

// Moves `group` to the CPU if that lowers the hand-overs around it; returns whether it did.
bool moveIfFewerHandovers(const std::vector<NodePlacement*>& group, Placement& placement) {
  size_t before = handoversAround(group, placement);
  for (NodePlacement* p : group) placement[p->node] = Device::Cpu;
  size_t after = handoversAround(group, placement);
  if (after >= before) {
    for (NodePlacement* p : group) placement[p->node] = Device::Npu;
    return false;
  }
  for (NodePlacement* p : group) {
    p->device = Device::Cpu;
    p->reason = PlacementReason::FewerHandovers;
    p->detail = fmt::format("data movement between CPU nodes ({} -> {} hand-overs around it)", before, after);
  }
  return true;
}

// Step 3 of the placement rule: whole connected groups first, then single nodes of groups that
// could not move as a whole. Every move lowers the total count, so the loop terminates.
void moveDataMovementToCpu(std::vector<NodePlacement>& nodes, Placement& placement, const SocProfile& soc) {
  bool moved = true;
  while (moved) {
    moved = false;
    for (const std::vector<NodePlacement*>& group : movableGroups(nodes, soc)) {
      if (group.empty()) continue;
      if (moveIfFewerHandovers(group, placement)) {
        moved = true;
        continue;
      }
      for (NodePlacement* p : group) moved |= group.size() > 1 && moveIfFewerHandovers({p}, placement);
    }
  }
}

// Connected groups of same-device nodes (union-find over producer->consumer edges).
void countSegments(PartitionReport& report, const Placement& placement) {
  std::map<const Node*, size_t> index;
  for (size_t i = 0; i < report.nodes.size(); ++i) index[report.nodes[i].node] = i;
  std::vector<size_t> parent(report.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (const NodePlacement& p : report.nodes)
    for (const Value* v : p.node->inputs())
      if (v && v->producer() && placement.at(v->producer()) == p.device)
        parent[root(index.at(p.node))] = root(index.at(v->producer()));
  for (size_t i = 0; i < report.nodes.size(); ++i)
    if (root(i) == i) ++(report.nodes[i].device == Device::Npu ? report.npu_segments : report.cpu_segments);
}

void addWarnings(PartitionReport& report, const Graph& graph, const SocProfile& soc,
                 const OpTargetMap& op_target) {
  for (NodePlacement& p : report.nodes) {
    if (p.device != Device::Cpu || soc.cpu.supportsOp(p.node->opType())) continue;
    // A user-defined op runs on the board with the user's own implementation (RKNN's
    // rknn_register_custom_ops), not the runtime's op list.
    if (opTraits(*p.node).has(OpTrait::UserDefined)) continue;
    p.cpu_runtime_lacks = true;
    report.warnings.push_back(
        fmt::format("node '{}' ({}) falls back to the CPU, but the {} CPU runtime does not implement {} "
                    "either: the model "
                    "cannot run on this SoC as is",
                    p.label, p.node->opType(), soc.name, p.node->opType()));
  }
  for (const auto& entry : op_target) {
    // A named reference, not a structured binding: lambdas may capture those only from C++20
    // (clang rejects it in C++17 mode).
    const std::string& key = entry.first;
    bool used = std::any_of(report.nodes.begin(), report.nodes.end(), [&](const NodePlacement& p) {
      return p.node->name() == key || p.node->opType() == key;
    });
    if (!used)
      report.warnings.push_back(
          fmt::format("op_target['{}'] matches no node name or op type of graph '{}'", key, graph.name));
  }
}

std::string macsText(int64_t macs) {
  if (macs >= 1000000000) return fmt::format("{:.2f} GMAC", static_cast<double>(macs) / 1e9);
  if (macs >= 1000000) return fmt::format("{:.2f} MMAC", static_cast<double>(macs) / 1e6);
  return fmt::format("{} MAC", macs);
}

}  // namespace

size_t countHandovers(const Graph& graph, const std::map<const Node*, Device>& placement) {
  size_t total = 0;
  for (const Node* n : graph.nodes())
    for (const Value* v : n->outputs()) total += valueHandovers(v, placement);
  return total;
}

PartitionReport partitionGraph(const Graph& graph, const SocProfile& soc, const OpTargetMap& op_target) {
  for (const auto& [key, value] : op_target) parseTargetValue(key, value);  // refuse bad values up front
  PartitionReport report;
  report.soc = soc.name;
  Placement placement;
  size_t index = 0;
  for (const Node* n : graph.nodes()) {
    report.nodes.push_back(placeNode(*n, index++, soc, op_target));
    placement[n] = report.nodes.back().device;
  }
  moveDataMovementToCpu(report.nodes, placement, soc);
  for (NodePlacement& p : report.nodes) {
    p.macs = nodeMacs(*p.node);
    report.total_macs += p.macs;
    if (p.device == Device::Npu) report.npu_macs += p.macs;
  }
  report.handovers = countHandovers(graph, placement);
  countSegments(report, placement);
  addWarnings(report, graph, soc, op_target);
  report.position.reserve(report.nodes.size());
  for (size_t i = 0; i < report.nodes.size(); ++i) report.position.emplace(report.nodes[i].node, i);
  return report;
}

size_t PartitionReport::count(Device d) const {
  return static_cast<size_t>(
      std::count_if(nodes.begin(), nodes.end(), [&](const NodePlacement& p) { return p.device == d; }));
}

double PartitionReport::npuMacShare() const {
  return total_macs == 0 ? 1.0 : static_cast<double>(npu_macs) / static_cast<double>(total_macs);
}

const NodePlacement* PartitionReport::find(const std::string& label) const {
  for (const NodePlacement& p : nodes)
    if (p.label == label) return &p;
  return nullptr;
}

const NodePlacement& PartitionReport::placementOf(const Node* node) const {
  auto it = position.find(node);
  if (it != position.end() && it->second < nodes.size() && nodes[it->second].node == node)
    return nodes[it->second];
  for (const NodePlacement& p : nodes)  // a report assembled by hand, or edited since
    if (p.node == node) return p;
  throw GraphError("PartitionReport: node is not part of the partitioned graph");
}

std::string PartitionReport::toText() const {
  fmt::memory_buffer s;
  auto out = std::back_inserter(s);
  fmt::format_to(
      out,
      "Partition for {}: {} nodes, {} on NPU, {} on CPU; {} NPU<->CPU hand-overs; {} NPU segment(s), {} "
      "CPU segment(s)\n",
      soc, nodes.size(), count(Device::Npu), count(Device::Cpu), handovers, npu_segments, cpu_segments);
  fmt::format_to(out, "MACs on NPU: {:.1f}% ({} of {})\n", npuMacShare() * 100, macsText(npu_macs),
                 macsText(total_macs));
  if (count(Device::Cpu) > 0) {
    fmt::format_to(out, "CPU nodes:\n");
    for (const NodePlacement& p : nodes)
      if (p.device == Device::Cpu)
        fmt::format_to(out, "  {} ({}): {}: {}{}\n", p.label, p.node->opType(), placementReasonName(p.reason),
                       p.detail, p.cpu_runtime_lacks ? " [not in the CPU runtime either]" : "");
  }
  if (!warnings.empty()) {
    fmt::format_to(out, "Warnings:\n");
    for (const std::string& w : warnings) fmt::format_to(out, "  {}\n", w);
  }
  return fmt::to_string(s);
}

}  // namespace npuc
