#include "frontend/shape_inference.h"

#include <algorithm>

#include "opset/eval.h"
#include "passes/inline_control_flow.h"

namespace npuc {

namespace {

bool allInputsConstant(const Node& n) {
  return std::all_of(n.inputs().begin(), n.inputs().end(),
                     [](const Value* v) { return !v || v->isConstant(); });
}

// Shape and Size only need the input's type, not its data.
bool isShapeQuery(const Node& n) {
  return n.domain().empty() && (n.opType() == "Shape" || n.opType() == "Size") && n.numInputs() == 1 &&
         n.input(0)->shapeIsStatic();
}

// Shape(start, end) (opset 15 slicing attributes; clamped like Python slices) or Size.
Tensor evalShapeQuery(const Node& n) {
  const Shape& s = n.input(0)->shape();
  if (n.opType() == "Size") return Tensor::scalar<int64_t>(shapeNumel(s));
  const auto rank = static_cast<int64_t>(s.size());
  auto clampDim = [rank](int64_t d) { return std::clamp(d < 0 ? d + rank : d, int64_t{0}, rank); };
  const int64_t start = clampDim(n.attrs().i("start", 0));
  const int64_t end = clampDim(n.attrs().i("end", rank));
  std::vector<int64_t> dims(s.begin() + start, s.begin() + std::max(start, end));
  return Tensor::fromVector(dims, {static_cast<int64_t>(dims.size())});
}

// Replaces n's outputs by constants holding `results`; the constants keep the outputs' names.
// Constant inputs only `n` read are erased right away, so folding a chain (Tile of Tile of ...)
// holds one link at a time, not every intermediate until the end of the import.
void replaceByConstants(Graph& g, Node* n, std::vector<Tensor> results) {
  std::vector<std::pair<Value*, std::string>> renames;
  for (size_t i = 0; i < n->numOutputs(); ++i) {
    Value* out = n->output(i);
    Value* c = g.addConstant(std::move(results[i]), out->name() + "_folded");
    out->replaceAllUsesWith(c);
    renames.emplace_back(c, out->name());
  }
  std::vector<Value*> inputs;
  for (Value* v : n->inputs()) {
    if (v && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
  }
  g.eraseNode(n);
  for (Value* v : inputs) g.eraseIfUnusedConstant(v);
  for (auto& [c, name] : renames) c->setName(name);
}

// Folds `n` if everything it reads is known now. Returns true if it was replaced.
bool tryFold(Graph& g, Node* n, int64_t limit, FoldStats& stats) {
  const bool shape_query = isShapeQuery(*n);
  if (!shape_query && !allInputsConstant(*n)) return false;
  const OpSchema* schema = OpRegistry::instance().find(*n);
  if (!schema || !schema->foldable || (!shape_query && !schema->make_kernel)) return false;
  const int64_t bytes = foldOutputBytes(*n);  // from the inferred shapes: nothing evaluated yet
  if (bytes < 0) return false;
  if (bytes > limit) {
    ++stats.kept_over_limit;
    return false;
  }
  std::vector<Tensor> results;
  if (shape_query) {
    results.push_back(evalShapeQuery(*n));
  } else {
    std::vector<const Tensor*> inputs;
    for (const Value* v : n->inputs()) inputs.push_back(v ? &v->constant() : nullptr);
    results = evalNode(*n, inputs);
  }
  replaceByConstants(g, n, std::move(results));
  ++stats.folded_nodes;
  return true;
}

// Erases nodes none of whose outputs is used or a graph output, last to first so whole dead
// chains go in one sweep.
void removeDeadNodes(Graph& g) {
  std::vector<Node*> nodes = g.nodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    const bool live = std::any_of(n->outputs().begin(), n->outputs().end(),
                                  [](const Value* v) { return v->numConsumers() > 0; });
    if (!live) g.eraseNode(n);
  }
}

}  // namespace

FoldStats inferShapesAndFold(Graph& graph, int64_t fold_limit_bytes) {
  FoldStats stats;
  Node* n = graph.firstNode();
  while (n) {
    // Control flow known now (a constant condition or trip count) is inlined before it is
    // inferred; the sweep goes on with the first inlined node.
    bool inlined = false;
    Node* resume = inlineControlFlowAt(graph, n, &inlined);
    if (inlined) {
      n = resume;
      continue;
    }
    inferNode(*n);
    Node* next = n->next();
    tryFold(graph, n, fold_limit_bytes, stats);
    n = next;
  }
  removeDeadNodes(graph);
  graph.removeUnusedValues();
  return stats;
}

void checkOpsSupported(const Graph& graph) {
  const OpRegistry& reg = OpRegistry::instance();
  for (const Node* n : graph.nodes()) {
    const OpSchema& s = reg.require(*n);
    if (s.dtypes.empty() || !n->hasInput(0)) continue;
    const DType t = n->input(0)->dtype();
    if (std::find(s.dtypes.begin(), s.dtypes.end(), t) == s.dtypes.end()) {
      std::string supported;
      for (DType d : s.dtypes) supported += (supported.empty() ? "" : ", ") + std::string(dtypeName(d));
      throw UnsupportedOpError("node '" + n->name() + "' (" + n->opType() + "): input '" +
                               n->input(0)->name() + "' has dtype " + dtypeName(t) + ", but npuc's " +
                               n->opType() + " supports only " + supported);
    }
  }
}

}  // namespace npuc
