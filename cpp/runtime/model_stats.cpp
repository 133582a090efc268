#include "runtime/model_stats.h"

#include "opset/macs.h"
#include "opset/registry.h"

namespace npuc {

namespace {

std::string histogramKey(const Node& n) {
  return n.domain().empty() ? n.opType() : n.domain() + "." + n.opType();
}

}  // namespace

ModelStats computeModelStats(const Graph& graph) {
  ModelStats s;
  for (const Node* n : graph.nodes()) {
    ++s.num_nodes;
    ++s.op_histogram[histogramKey(*n)];
    s.macs += nodeMacs(*n);
  }
  for (const Value* v : graph.values()) {
    if (!v->isConstant() || !isFloating(v->dtype())) continue;
    s.params += v->constant().numel();
    s.param_bytes += static_cast<int64_t>(v->constant().nbytes());
  }
  return s;
}

}  // namespace npuc
