#include "passes/core/greedy_driver.h"

#include <algorithm>
#include <cstdint>
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

// A set of node pointers in one flat table (open addressing, linear probing): the worklist inserts
// and erases every node of the graph on every sweep of every pattern pass, and a node-based set
// paid a heap allocation and a free for each, which dominated large graphs' optimization time.
class NodeSet {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > slots_.size()) rehash(cap);
  }
  bool insert(Node* n) {
    if (2 * (used_ + 1) > slots_.size()) {  // at most half full, tombstones included
      size_t cap = 16;
      while (cap < 4 * (live_ + 1)) cap *= 2;
      rehash(cap);
    }
    size_t i = home(n), tomb = kNone;
    for (; slots_[i] != nullptr; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == n) return false;
      if (slots_[i] == tombstone() && tomb == kNone) tomb = i;
    }
    if (tomb != kNone) {
      slots_[tomb] = n;
    } else {
      slots_[i] = n;
      ++used_;
    }
    ++live_;
    return true;
  }
  bool erase(Node* n) {
    if (slots_.empty()) return false;
    for (size_t i = home(n); slots_[i] != nullptr; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i] == n) {
        slots_[i] = tombstone();
        --live_;
        return true;
      }
    return false;
  }

 private:
  static constexpr size_t kNone = ~size_t{0};
  // A marker no real node has: the table's own address, never handed out as a Node.
  Node* tombstone() const { return reinterpret_cast<Node*>(const_cast<NodeSet*>(this)); }
  size_t home(const Node* n) const {
    const uint64_t h = reinterpret_cast<uintptr_t>(n) * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing
    return static_cast<size_t>(h >> 20) & (slots_.size() - 1);
  }
  void rehash(size_t cap) {
    std::vector<Node*> old(cap, nullptr);
    old.swap(slots_);
    used_ = live_ = 0;
    for (Node* n : old)
      if (n != nullptr && n != tombstone()) insert(n);
  }
  std::vector<Node*> slots_;
  size_t used_ = 0;  // slots not empty (members and tombstones): bounds the probe lengths
  size_t live_ = 0;  // members
};

// The worklist. Nodes are visited first-in first-out; `members_` is the truth about what is
// pending (a node erased while queued is dropped from it, and its stale queue entry skipped).
class Worklist : public Rewriter::Listener {
 public:
  // Sized for every node at once (each sweep starts with all of them), so filling it does not
  // rehash again and again.
  explicit Worklist(size_t nodes) { members_.reserve(nodes); }
  void push(Node* n) {
    if (n && n->inGraph() && members_.insert(n)) queue_.push_back(n);
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
  NodeSet members_;
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
