#include "perf/task_grouping.h"

#include <algorithm>
#include <map>
#include <set>

namespace npuc::perf {

std::vector<TaskNodes> groupTasks(const Graph& graph, const PartitionReport& placement,
                                  const std::vector<FusionGroup>& groups) {
  std::map<const Node*, const FusionGroup*> group_of;
  for (const FusionGroup& g : groups)
    for (const Node* n : g.nodes()) group_of[n] = &g;
  std::map<const Node*, std::string> label;
  for (const NodePlacement& p : placement.nodes) label[p.node] = p.label;

  std::vector<TaskNodes> tasks;
  for (const Node* n : graph.nodes()) {
    auto it = group_of.find(n);
    // A group runs where its last node sits: a fused residual Add may read a value (e.g. a
    // downsample Conv's output) produced after the anchor, so the anchor's slot is too early.
    if (it != group_of.end() && it->second->nodes().back() != n) continue;
    TaskNodes t;
    t.device = placement.deviceOf(n);
    if (it != group_of.end()) {
      t.nodes = it->second->nodes();
      t.fused = true;
      t.op_type = it->second->pattern();
    } else {
      t.nodes = {n};
      t.op_type = n->opType();
    }
    for (const Node* m : t.nodes) t.full_name += (t.full_name.empty() ? "" : "+") + label[m];
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::vector<const Value*> externalInputs(const TaskNodes& t) {
  std::set<const Value*> inside;
  for (const Node* n : t.nodes)
    for (const Value* o : n->outputs()) inside.insert(o);
  std::vector<const Value*> out;
  for (const Node* n : t.nodes)
    for (const Value* v : n->inputs())
      if (v && !inside.count(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

}  // namespace npuc::perf
