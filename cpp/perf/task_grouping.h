// NPU/CPU tasks of a placed graph: one per fusion group (anchor + activation + residual Add), one
// per remaining node. eval_perf costs these tasks and the lowering (cpp/lower) compiles them, so
// both see the same task boundaries.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "target/fusion_groups.h"
#include "target/partition.h"

namespace npuc::perf {

struct TaskNodes {
  std::vector<const Node*> nodes;  // execution order; nodes[0] is the anchor of a group
  bool fused = false;
  Device device = Device::Npu;
  std::string op_type;    // the group's pattern ("Conv+Relu") or the node's op type
  std::string full_name;  // node labels joined by '+'
};

// Tasks in graph order (a group sits at its last node's position, so every value it reads from
// outside has been produced).
std::vector<TaskNodes> groupTasks(const Graph& graph, const PartitionReport& placement,
                                  const std::vector<FusionGroup>& groups);

// Values a task reads from outside itself (constants included), in first-use order.
std::vector<const Value*> externalInputs(const TaskNodes& t);

}  // namespace npuc::perf
