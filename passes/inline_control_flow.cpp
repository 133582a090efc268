#include "passes/inline_control_flow.h"

#include <optional>
#include <string>

#include "opset/ops/control_subgraph.h"
#include "passes/control_flow_splice.h"

namespace npuc {

namespace {

using namespace control;

// Sub-graph inputs in order: the non-constant bindings.
std::vector<Value*> liveInputs(const std::vector<SubgraphBinding>& formal,
                               const std::vector<Value*>& formal_values, const Node& node) {
  std::vector<Value*> out;
  for (size_t i = 0; i < formal.size(); ++i) {
    if (!formal[i].constant) out.push_back(formal_values.at(i));
  }
  for (size_t i = numExplicitInputs(node); i < node.numInputs(); ++i) {
    if (!node.input(i)->isConstant()) out.push_back(node.input(i));
  }
  return out;
}

// Why unrolling `unrolled` more nodes into `graph` would break a bound, or nullopt when it fits.
std::optional<std::string> overUnrollBudget(int64_t unrolled, const Graph& graph) {
  if (unrolled > kMaxUnrolledNodes)
    return "unrolling would exceed " + std::to_string(kMaxUnrolledNodes) + " nodes";
  if (unrolled + static_cast<int64_t>(graph.numNodes()) > kMaxGraphNodesAfterUnroll) {
    return "the graph would exceed " + std::to_string(kMaxGraphNodesAfterUnroll) +
           " nodes (nested loops multiply)";
  }
  return std::nullopt;
}

bool foldsToTrue(const Value& v) {
  return v.isConstant() && v.constant().numel() == 1 && v.constant().intAt(0) != 0;
}

LogicalResult inlineIf(Node& root, Rewriter& rw) {
  const Tensor* c = root.input(0) && root.input(0)->isConstant() ? &root.input(0)->constant() : nullptr;
  if (!c) return rw.notifyMatchFailure(root, "the condition depends on the data: the If runs on the CPU");
  if (c->numel() != 1) return rw.notifyMatchFailure(root, "the condition does not hold exactly one value");
  const char* branch = c->intAt(0) != 0 ? "then_branch" : "else_branch";
  std::unique_ptr<Graph> sub = buildSubgraph(root, branch, {}, implicitBindings(root));
  if (sub->outputs().size() != root.numOutputs()) {
    return rw.notifyMatchFailure(root,
                                 std::string(branch) + " has a different number of outputs than the node");
  }
  Splicer sp(rw.graph(), root);
  sp.finish(sp.splice(*sub, liveInputs({}, {}, root), root.name() + "/" + (c->intAt(0) ? "then" : "else")));
  return success();
}

LogicalResult unrollLoop(Node& root, Rewriter& rw) {
  const size_t n_explicit = numExplicitInputs(root);
  if (n_explicit < 2) return rw.notifyMatchFailure(root, "malformed Loop (fewer than 2 inputs)");
  const size_t n_carried = n_explicit - 2, n_scan = root.numOutputs() - n_carried;
  Value* m = root.input(0);
  if (!m || !m->isConstant()) return rw.notifyMatchFailure(root, "the trip count is not a constant");
  if (root.input(1) && !foldsToTrue(*root.input(1))) {
    return rw.notifyMatchFailure(root, "the initial condition is not a constant true");
  }
  const int64_t trips = m->constant().intAt(0);
  if (trips < 1 || trips > kMaxUnrollTrips) {
    return rw.notifyMatchFailure(root, "trip count " + std::to_string(trips) + " is outside [1, " +
                                           std::to_string(kMaxUnrollTrips) + "]");
  }
  // Check, then build: every iteration's body is built (with iter_num and cond as constants, so
  // they fold) before the graph changes. A carried value that folds in one iteration is a constant
  // for the next.
  const auto implicit = implicitBindings(root);
  const Tensor cond_true = Tensor::scalar(true);
  std::vector<Tensor> iters;
  for (int64_t t = 0; t < trips; ++t) iters.push_back(Tensor::scalar<int64_t>(t));
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<std::vector<SubgraphBinding>> bindings;
  std::vector<SubgraphBinding> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(bindInput(root, 2 + i));
  int64_t total_nodes = 0;
  for (int64_t t = 0; t < trips; ++t) {
    std::vector<SubgraphBinding> formal(2);
    formal[0].dtype = DType::Int64;
    formal[0].constant = &iters[t];
    formal[1].dtype = DType::Bool;
    formal[1].constant = &cond_true;
    formal.insert(formal.end(), carried.begin(), carried.end());
    std::unique_ptr<Graph> body = buildSubgraph(root, "body", formal, implicit);
    if (body->outputs().size() != 1 + n_carried + n_scan) {
      return rw.notifyMatchFailure(root, "the body's output count does not match the node");
    }
    const Value& cond_out = *body->outputs()[0];
    if (!cond_out.isConstant() || cond_out.constant().numel() != 1) {
      return rw.notifyMatchFailure(
          root, "the body's condition does not fold to a constant (it depends on the data)");
    }
    // A condition that folds to false ends the loop after this iteration: fine unless scan outputs
    // were sized for all M iterations.
    const bool last = cond_out.constant().intAt(0) == 0;
    if (last && n_scan > 0) {
      return rw.notifyMatchFailure(root, "the body's condition turns false before M iterations");
    }
    for (size_t i = 0; i < body->outputs().size(); ++i) {
      if (!body->outputs()[i]->shapeIsStatic())
        return rw.notifyMatchFailure(root, "a body output is not static");
    }
    for (size_t i = 0; i < n_carried; ++i) {
      const Value& out = *body->outputs()[1 + i];
      if (out.dtype() != carried[i].dtype || out.shape() != carried[i].shape) {
        return rw.notifyMatchFailure(root, "loop-carried value " + std::to_string(i) + " changes type");
      }
      carried[i].constant = out.isConstant() ? &out.constant() : nullptr;
    }
    total_nodes += static_cast<int64_t>(body->numNodes());
    if (std::optional<std::string> why = overUnrollBudget(total_nodes, rw.graph())) {
      return rw.notifyMatchFailure(root, *why);
    }
    bindings.push_back(std::move(formal));
    bodies.push_back(std::move(body));
    if (last) break;
  }
  Splicer sp(rw.graph(), root);
  std::vector<Value*> cur;
  for (size_t i = 0; i < n_carried; ++i) cur.push_back(root.input(2 + i));
  std::vector<std::vector<Value*>> scans(n_scan);
  for (size_t t = 0; t < bodies.size(); ++t) {
    std::vector<Value*> formal_values{nullptr, nullptr};
    formal_values.insert(formal_values.end(), cur.begin(), cur.end());
    std::vector<Value*> outs = sp.splice(*bodies[t], liveInputs(bindings[t], formal_values, root),
                                         root.name() + "/iter" + std::to_string(t));
    for (size_t i = 0; i < n_carried; ++i) cur[i] = outs[1 + i];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + n_carried + k]);
  }
  std::vector<Value*> repl = cur;
  for (size_t k = 0; k < n_scan; ++k) repl.push_back(stackSteps(sp, scans[k], 0, root.name() + "_scan"));
  sp.finish(repl);
  return success();
}

LogicalResult unrollScan(Node& root, Rewriter& rw) {
  const ScanLayout L = scanLayout(root);
  if (L.batched) return rw.notifyMatchFailure(root, "Scan-8 (batch form) runs on the CPU");
  const int64_t T = L.length;
  if (T < 1 || T > kMaxUnrollTrips) {
    return rw.notifyMatchFailure(root, "sequence length " + std::to_string(T) + " is outside [1, " +
                                           std::to_string(kMaxUnrollTrips) + "]");
  }
  const auto implicit = implicitBindings(root);
  std::vector<SubgraphBinding> formal = scanBodyBindings(root, L);
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<std::vector<SubgraphBinding>> bindings;
  int64_t total_nodes = 0;
  for (int64_t t = 0; t < T; ++t) {
    std::unique_ptr<Graph> body = buildSubgraph(root, "body", formal, implicit);
    if (body->outputs().size() != L.n_state + L.n_scan_out) {
      return rw.notifyMatchFailure(root, "the body's output count does not match the node");
    }
    for (size_t i = 0; i < L.n_state; ++i) {
      const Value& out = *body->outputs()[i];
      if (!out.shapeIsStatic() || out.dtype() != formal[i].dtype || out.shape() != formal[i].shape) {
        return rw.notifyMatchFailure(root, "state " + std::to_string(i) + " changes type");
      }
    }
    total_nodes += static_cast<int64_t>(body->numNodes()) + static_cast<int64_t>(L.n_scan_in);
    if (std::optional<std::string> why = overUnrollBudget(total_nodes, rw.graph())) {
      return rw.notifyMatchFailure(root, *why);
    }
    bindings.push_back(formal);
    bodies.push_back(std::move(body));
    for (size_t i = 0; i < L.n_state; ++i) {
      const Value& out = *bodies.back()->outputs()[i];
      formal[i].constant = out.isConstant() ? &out.constant() : nullptr;
    }
  }
  Splicer sp(rw.graph(), root);
  std::vector<Value*> states;
  for (size_t i = 0; i < L.n_state; ++i) states.push_back(root.input(L.stateInput(i)));
  std::vector<std::vector<Value*>> scans(L.n_scan_out, std::vector<Value*>(static_cast<size_t>(T)));
  for (int64_t t = 0; t < T; ++t) {
    std::vector<Value*> formal_values = states;
    for (size_t j = 0; j < L.n_scan_in; ++j) {
      Value* x = root.input(L.scanInput(j));
      const int64_t step = L.in_reverse[j] ? T - 1 - t : t;
      Attributes a;
      a.set("axis", L.in_axes[j]);
      const SubgraphBinding& b = bindings[t][L.n_state + j];
      formal_values.push_back(sp.add("Gather",
                                     {x, sp.constant(Tensor::scalar<int64_t>(step), root.name() + "_step")},
                                     b.dtype, b.shape, a)
                                  ->output());
    }
    std::vector<Value*> outs = sp.splice(*bodies[t], liveInputs(bindings[t], formal_values, root),
                                         root.name() + "/step" + std::to_string(t));
    for (size_t i = 0; i < L.n_state; ++i) states[i] = outs[i];
    for (size_t k = 0; k < L.n_scan_out; ++k) {
      const size_t pos = static_cast<size_t>(L.out_reverse[k] ? T - 1 - t : t);
      scans[k][pos] = outs[L.n_state + k];
    }
  }
  std::vector<Value*> repl = states;
  for (size_t k = 0; k < L.n_scan_out; ++k) {
    const int64_t axis = normalizeAxis(L.out_axes[k], scans[k][0]->rank() + 1, "Scan scan_output_axes");
    repl.push_back(stackSteps(sp, scans[k], axis, root.name() + "_scan"));
  }
  sp.finish(repl);
  return success();
}

}  // namespace

LogicalResult InlineControlFlow::matchAndRewrite(Node& root, Rewriter& rw) const {
  if (!root.domain().empty()) return failure();
  if (root.opType() == "If") return inlineIf(root, rw);
  if (root.opType() == "Loop") return unrollLoop(root, rw);
  if (root.opType() == "Scan") return unrollScan(root, rw);
  return failure();
}

Node* inlineControlFlowAt(Graph& g, Node* node, bool* inlined) {
  *inlined = false;
  const std::string& op = node->opType();
  if (!node->domain().empty() || (op != "If" && op != "Loop" && op != "Scan")) return node;
  PassContext ctx;
  ctx.record_match_failures = false;
  ctx.current_pass = "inline_control_flow";
  Rewriter rw(g, ctx);
  Node* before = node->prev();
  if (InlineControlFlow().matchAndRewrite(*node, rw).failed()) return node;
  *inlined = true;
  return before ? before->next() : g.firstNode();
}

}  // namespace npuc
