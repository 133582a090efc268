#include "passes/core/greedy_driver.h"

#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace npuc {

namespace {

// Patterns indexed by the op type they root at, so visiting a node costs one hash lookup when no
// pattern is interested in it.
class PatternIndex {
 public:
  PatternIndex(const PatternSet& set, bool allow_numerics_change) {
    for (const auto& p : set.patterns()) {
      if (p->changesNumerics() && !allow_numerics_change) continue;
      if (p->rootOps().empty()) {
        any_.push_back(p.get());
      } else {
        for (const std::string& op : p->rootOps()) by_op_[op].push_back(p.get());
      }
    }
  }
  // Patterns for `op`: the op-specific ones first, then the catch-all ones.
  void forOp(const std::string& op, std::vector<const RewritePattern*>& out) const {
    out.clear();
    auto it = by_op_.find(op);
    if (it != by_op_.end()) out = it->second;
    out.insert(out.end(), any_.begin(), any_.end());
  }
  bool empty() const { return by_op_.empty() && any_.empty(); }

 private:
  std::unordered_map<std::string, std::vector<const RewritePattern*>> by_op_;
  std::vector<const RewritePattern*> any_;
};

// The worklist. Nodes are visited first-in first-out; `members_` is the truth about what is
// pending (a node erased while queued is dropped from it, and its stale queue entry skipped).
class Worklist : public Rewriter::Listener {
 public:
  // Sized for every node at once (each sweep starts with all of them), so filling it does not
  // rehash again and again.
  explicit Worklist(size_t nodes) { members_.reserve(nodes); }
  void push(Node* n) {
    if (n && n->inGraph() && members_.insert(n).second) queue_.push_back(n);
  }
  Node* pop() {
    while (!queue_.empty()) {
      Node* n = queue_.front();
      queue_.pop_front();
      if (members_.erase(n)) return n;
    }
    return nullptr;
  }
  bool wasErased(Node* n) const { return erased_.count(n) != 0; }
  void clearErased() { erased_.clear(); }

  void nodeCreated(Node& node) override {
    erased_.erase(&node);  // the allocator may reuse an erased node's address
    push(&node);
  }
  void nodeModified(Node& node) override {
    push(&node);
    pushUsers(node);
  }
  void nodeErased(Node& node) override {
    members_.erase(&node);
    erased_.insert(&node);
  }
  void valueReplaced(Value& /*old_value*/, Value& new_value) override {
    for (const Use& u : new_value.uses()) push(u.user);
    push(new_value.producer());
  }

 private:
  void pushUsers(const Node& node) {
    for (const Value* out : node.outputs()) {
      for (const Use& u : out->uses()) push(u.user);
    }
  }

  std::deque<Node*> queue_;
  std::unordered_set<Node*> members_;
  std::unordered_set<Node*> erased_;
};

// Keeps, of the failures recorded since `first`, one per (pattern, node, reason) and only those
// whose node survived: a node that was rewritten later in the run did, in the end, match.
void pruneMatchFailures(const Graph& graph, PassContext& ctx, size_t first) {
  if (ctx.match_failures.size() == first) return;  // none recorded: no need to list every node name
  std::unordered_set<std::string> alive;
  alive.reserve(graph.numNodes());
  for (const Node* n : graph.nodes()) alive.insert(n->name());
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<MatchFailure> kept(ctx.match_failures.begin(), ctx.match_failures.begin() + first);
  for (size_t i = first; i < ctx.match_failures.size(); ++i) {
    MatchFailure& f = ctx.match_failures[i];
    if (!alive.count(f.node) || !seen.insert({f.pattern, f.node, f.reason}).second) continue;
    kept.push_back(std::move(f));
  }
  ctx.match_failures = std::move(kept);
}

}  // namespace

size_t applyPatternsGreedily(Graph& graph, const PatternSet& patterns, PassContext& ctx) {
  const PatternIndex index(patterns, ctx.allowsNumericsChange());
  if (index.empty()) return 0;
  const size_t failures_before = ctx.match_failures.size();
  Worklist worklist(graph.numNodes());
  Rewriter rw(graph, ctx, &worklist);
  std::vector<const RewritePattern*> candidates;
  size_t total = 0;
  bool converged = false;
  for (int sweep = 0; sweep < ctx.max_greedy_iterations && !converged; ++sweep) {
    for (Node* n : graph.nodes()) worklist.push(n);
    // Within one sweep, patterns that keep undoing each other would never drain the worklist;
    // a budget proportional to the graph size cuts such a cycle and reports it.
    const size_t budget = 8 * (graph.numNodes() + 16);
    size_t changes = 0;
    while (Node* n = worklist.pop()) {
      index.forOp(n->opType(), candidates);
      for (const RewritePattern* p : candidates) {
        worklist.clearErased();
        rw.setCurrentPattern(p->name());
        rw.setInsertionPointBefore(n);
        if (p->matchAndRewrite(*n, rw).failed()) continue;
        ++changes;
        if (!worklist.wasErased(n)) worklist.push(n);  // changed in place: look at it again
        break;
      }
      if (changes > budget) {
        ctx.warn("rewrites did not settle within one sweep (" + std::to_string(changes) +
                 " rewrites on a graph of " + std::to_string(graph.numNodes()) +
                 " nodes; patterns undo each other?); stopped");
        total += changes;
        pruneMatchFailures(graph, ctx, failures_before);
        return total;
      }
    }
    total += changes;
    converged = changes == 0;
  }
  if (!converged) {
    ctx.warn("pattern rewrites did not reach a fixed point after " +
             std::to_string(ctx.max_greedy_iterations) + " sweeps; stopped");
  }
  pruneMatchFailures(graph, ctx, failures_before);
  return total;
}

}  // namespace npuc
