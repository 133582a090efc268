// A small combinator matcher that keeps patterns declarative. A pattern describes the sub-graph
// it wants, rooted at one node:
//
//   Value *x, *c;
//   Node* mul;
//   auto pat = m::op("Mul", m::any(&x), m::constant(&c)).bind(&mul);
//   if (m::matchRoot(root, pat, rw).failed()) return failure();   // reason already recorded
//
// Rules, chosen so the common case needs no extra words:
//   * Operands of commutative binary ops (OpTrait::Commutative: Add, Mul, Max, ...) are tried in
//     both orders; captures made by a failed order are undone.
//   * An op matched below the root is "interior": by default its output must have exactly one
//     consumer and not be a graph output, because a rewrite that absorbs it would otherwise have
//     to keep it alive (duplicating work). allowMultipleUses() lifts that for one op.
//   * Listing operands fixes the arity (trailing omitted optional inputs do not count) unless
//     allowExtraInputs() says they match a prefix; listing none matches any inputs.
//   * m::oneOf({"Reshape", "Flatten"}, ...) matches any of several op types, m::trait(OpTrait::X,
//     ...) any op with a trait (opset/op_traits.h).
//   * The first reason a match failed is kept. matchRoot records it with the rewriter (so a user
//     can ask why a fusion did not happen) when it is news: a one-use guard stopped the match, or
//     the match failed after the root and at least one operand op had matched. "This Mul is not
//     fed by a Conv" at the first level is the ordinary case and stays quiet.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/op_traits.h"
#include "passes/core/logical_result.h"
#include "passes/core/rewriter.h"

namespace npuc {
namespace m {

// Per-attempt state: capture trail (so backtracking can undo bindings) and the failure reason.
class MatchState {
 public:
  template <typename T>
  void bind(T** slot, T* v) {
    if (!slot) return;
    trail_.push_back({reinterpret_cast<void**>(slot), reinterpret_cast<void*>(*slot)});
    *slot = v;
  }
  size_t mark() const { return trail_.size(); }
  void rollback(size_t mark);
  // Returns false so matchers can `return st.fail(...)`. Only the first reason is kept.
  // `guard` marks failures of a one-use guard (always worth reporting).
  bool fail(const std::string& reason, bool guard = false);
  const std::string& reason() const { return reason_; }
  // Counts nodes whose op type matched; a failure deep into a pattern is worth reporting.
  void noteOpMatched() { ++ops_matched_; }
  bool failureIsNews() const { return guard_failure_ || ops_at_failure_ >= 2; }

 private:
  struct Binding {
    void** slot;
    void* previous;
  };
  std::vector<Binding> trail_;
  std::string reason_;
  int ops_matched_ = 0;
  int ops_at_failure_ = 0;
  bool guard_failure_ = false;
};

// Anything that matches a Value (leaf or op). Cheap to copy (shared, immutable implementation).
class ValuePattern {
 public:
  struct Impl {
    virtual ~Impl() = default;
    virtual bool match(Value* v, MatchState& st) const = 0;
  };
  explicit ValuePattern(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  bool match(Value* v, MatchState& st) const { return impl_->match(v, st); }

 private:
  std::shared_ptr<const Impl> impl_;
};

using NodePredicate = std::function<bool(const Node&)>;
using ValuePredicate = std::function<bool(const Value&)>;

// Matches a node of one op type; a builder whose modifiers return *this.
class OpPattern {
 public:
  OpPattern(std::vector<std::string> op_types, std::vector<ValuePattern> operands);

  // Stores the matched node in *slot.
  OpPattern& bind(Node** slot);
  // Adds a constraint on the node (attributes, shapes, ...); `what` names it in failure reasons.
  OpPattern& where(NodePredicate pred, std::string what);
  // The attribute `name` is present and equal to `value` (an absent attribute never matches; use
  // where() to give defaults meaning).
  OpPattern& attrEq(const std::string& name, AttrValue value);
  // Op in a non-default domain (kNpucDomain for npuc's own ops).
  OpPattern& domain(std::string d);
  // Matches the op type in whatever domain the node has: for op-type lists written by name
  // without a domain (an SoC profile lists ONNX's Relu and npuc's SiLU side by side).
  OpPattern& anyDomain();
  // Lets this op's output have other consumers when it is matched as an interior operand.
  OpPattern& allowMultipleUses();
  // Matches operands only in the written order even for a commutative op.
  OpPattern& ordered();
  // The listed operands match the first inputs; further inputs are allowed (Slice, Conv, ...).
  OpPattern& allowExtraInputs();

  // A pattern matching any op that has every flag in `trait` (see m::trait).
  static OpPattern byTrait(OpTrait trait, std::vector<ValuePattern> operands);

  // True if `op_type` is one this pattern matches (for a trait pattern: the op of that name has it).
  bool acceptsOpType(const std::string& op_type) const;
  // True if the node's op is one this pattern matches; the domain is checked by matchNode.
  bool acceptsType(const Node& node) const;

  // Matches `node` itself (as a root: no use-count constraint on its outputs).
  bool matchNode(Node& node, MatchState& st) const;
  // As an operand: the value must be output 0 of a matching node, and (unless allowed) have one
  // consumer.
  operator ValuePattern() const;  // NOLINT(google-explicit-constructor): the point of the DSL

 private:
  struct Spec;
  std::shared_ptr<Spec> spec_;
};

// ---- leaves
// Any present value.
ValuePattern any(Value** capture = nullptr);
// A constant (a Value carrying a tensor).
ValuePattern constant(Value** capture = nullptr);
// A constant with exactly one element (any shape of ones: [], [1], [1,1,1], ...).
ValuePattern scalarConstant(Value** capture = nullptr);
// A one-element constant whose value equals `v` exactly (compared in double).
ValuePattern scalarConstant(double v, Value** capture = nullptr);
// The value already captured in *earlier (to express "the same x feeds both branches").
ValuePattern same(Value* const* earlier);
// Any value satisfying `pred`; `what` names the constraint in failure reasons.
ValuePattern value(ValuePredicate pred, std::string what, Value** capture = nullptr);

// ---- ops
template <typename... Operands>
OpPattern op(std::string op_type, Operands&&... operands) {
  return OpPattern({std::move(op_type)},
                   std::vector<ValuePattern>{ValuePattern(std::forward<Operands>(operands))...});
}
// Matches any op with every flag in `trait`, looked up in the node's own domain, so a pattern can
// root on a fact instead of a list of op types:
//   m::trait(OpTrait::ElementwiseUnary, m::op("Transpose", m::any(&x)))
template <typename... Operands>
OpPattern trait(OpTrait t, Operands&&... operands) {
  return OpPattern::byTrait(t, std::vector<ValuePattern>{ValuePattern(std::forward<Operands>(operands))...});
}
template <typename... Operands>
OpPattern oneOf(std::vector<std::string> op_types, Operands&&... operands) {
  return OpPattern(std::move(op_types),
                   std::vector<ValuePattern>{ValuePattern(std::forward<Operands>(operands))...});
}

// Why `v` cannot be absorbed into a rewrite as an interior value ("has 2 users", "is a graph
// output"), or an empty string if it can: it has exactly one consumer.
std::string interiorUseProblem(const Value& v);

// True for the ops whose operand order does not matter (OpTrait::Commutative).
bool isCommutative(const Node& node);

// Matches `pattern` at `root`. On failure records the reason through rw.notifyMatchFailure unless
// the root's op type is simply a different one (not worth a report line).
LogicalResult matchRoot(Node& root, const OpPattern& pattern, Rewriter& rw);

}  // namespace m
}  // namespace npuc
