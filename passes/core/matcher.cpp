#include "passes/core/matcher.h"

#include <algorithm>

namespace npuc {
namespace m {

// ---------------------------------------------------------------- MatchState

void MatchState::rollback(size_t mark) {
  while (trail_.size() > mark) {
    *trail_.back().slot = trail_.back().previous;
    trail_.pop_back();
  }
}

bool MatchState::fail(const std::string& reason, bool guard) {
  if (reason_.empty()) {
    reason_ = reason;
    ops_at_failure_ = ops_matched_;
    guard_failure_ = guard;
  }
  return false;
}

// ---------------------------------------------------------------- leaves

namespace {

std::string quoted(const Value& v) {
  return "'" + v.name() + "'";
}

class PredicateLeaf : public ValuePattern::Impl {
 public:
  PredicateLeaf(ValuePredicate pred, std::string what, Value** capture)
      : pred_(std::move(pred)), what_(std::move(what)), capture_(capture) {}
  bool match(Value* v, MatchState& st) const override {
    if (!v) return st.fail("an omitted optional input is not " + what_);
    if (pred_ && !pred_(*v)) return st.fail(quoted(*v) + " is not " + what_);
    st.bind(capture_, v);
    return true;
  }

 private:
  ValuePredicate pred_;
  std::string what_;
  Value** capture_;
};

class SameLeaf : public ValuePattern::Impl {
 public:
  explicit SameLeaf(Value* const* earlier) : earlier_(earlier) {}
  bool match(Value* v, MatchState& st) const override {
    if (v && v == *earlier_) return true;
    return st.fail((v ? quoted(*v) : std::string("an omitted input")) + " is not the same value as " +
                   (*earlier_ ? quoted(**earlier_) : std::string("the earlier capture")));
  }

 private:
  Value* const* earlier_;
};

bool isOneElementConstant(const Value& v) {
  return v.isConstant() && v.constant().numel() == 1;
}

}  // namespace

ValuePattern any(Value** capture) {
  return ValuePattern(std::make_shared<PredicateLeaf>(nullptr, "present", capture));
}

ValuePattern constant(Value** capture) {
  return ValuePattern(
      std::make_shared<PredicateLeaf>([](const Value& v) { return v.isConstant(); }, "a constant", capture));
}

ValuePattern scalarConstant(Value** capture) {
  return ValuePattern(
      std::make_shared<PredicateLeaf>(isOneElementConstant, "a one-element constant", capture));
}

ValuePattern scalarConstant(double expected, Value** capture) {
  auto pred = [expected](const Value& v) {
    return isOneElementConstant(v) && v.constant().doubleAt(0) == expected;
  };
  std::string what = "the constant " + std::to_string(expected);
  return ValuePattern(std::make_shared<PredicateLeaf>(pred, what, capture));
}

ValuePattern same(Value* const* earlier) {
  return ValuePattern(std::make_shared<SameLeaf>(earlier));
}

ValuePattern value(ValuePredicate pred, std::string what, Value** capture) {
  return ValuePattern(std::make_shared<PredicateLeaf>(std::move(pred), std::move(what), capture));
}

// ---------------------------------------------------------------- OpPattern

std::string interiorUseProblem(const Value& v) {
  if (v.isGraphOutput()) return "interior value " + quoted(v) + " is a graph output";
  if (v.uses().size() > 1) {
    return "interior value " + quoted(v) + " has " + std::to_string(v.uses().size()) + " users";
  }
  return std::string();
}

bool isCommutative(const Node& node) {
  return opTraits(node).has(OpTrait::Commutative);
}

struct OpPattern::Spec {
  std::vector<std::string> op_types;
  OpTrait trait = OpTrait::None;  // when set, matches by trait instead of op_types
  std::string domain;
  bool any_domain = false;
  std::vector<ValuePattern> operands;
  std::vector<std::pair<NodePredicate, std::string>> predicates;
  Node** bind_slot = nullptr;
  bool multi_use = false;
  bool ordered = false;
  bool extra_inputs = false;

  std::string typeNames() const {
    if (trait != OpTrait::None) return "op with trait " + opTraitNames(trait);
    std::string s;
    for (const std::string& t : op_types) s += (s.empty() ? "" : "|") + t;
    return s;
  }
};

namespace {

bool sameDomain(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  return norm(a) == norm(b);
}

// Inputs that count for arity: trailing omitted optional inputs do not.
size_t effectiveArity(const Node& n) {
  size_t k = n.numInputs();
  while (k > 0 && !n.input(k - 1)) --k;
  return k;
}

bool matchOperands(const Node& node, const std::vector<ValuePattern>& ops, const std::vector<size_t>& order,
                   MatchState& st) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].match(node.input(order[i]), st)) return false;
  }
  return true;
}

}  // namespace

OpPattern::OpPattern(std::vector<std::string> op_types, std::vector<ValuePattern> operands)
    : spec_(std::make_shared<Spec>()) {
  spec_->op_types = std::move(op_types);
  spec_->operands = std::move(operands);
}

OpPattern OpPattern::byTrait(OpTrait trait, std::vector<ValuePattern> operands) {
  OpPattern p({}, std::move(operands));
  p.spec_->trait = trait;
  return p;
}

bool OpPattern::acceptsOpType(const std::string& op_type) const {
  if (spec_->trait != OpTrait::None) return opTraitsOfType(op_type).has(spec_->trait);
  return std::find(spec_->op_types.begin(), spec_->op_types.end(), op_type) != spec_->op_types.end();
}

bool OpPattern::acceptsType(const Node& node) const {
  // A trait is looked up in the node's own domain, so a trait pattern needs no domain().
  if (spec_->trait != OpTrait::None) return opTraits(node).has(spec_->trait);
  return acceptsOpType(node.opType());
}

OpPattern& OpPattern::bind(Node** slot) {
  spec_->bind_slot = slot;
  return *this;
}

OpPattern& OpPattern::where(NodePredicate pred, std::string what) {
  spec_->predicates.emplace_back(std::move(pred), std::move(what));
  return *this;
}

OpPattern& OpPattern::attrEq(const std::string& name, AttrValue expected) {
  auto pred = [name, expected](const Node& n) {
    const AttrValue* a = n.attrs().find(name);
    return a && *a == expected;
  };
  return where(pred, "attribute '" + name + "' as required");
}

OpPattern& OpPattern::domain(std::string d) {
  spec_->domain = std::move(d);
  return *this;
}

OpPattern& OpPattern::anyDomain() {
  spec_->any_domain = true;
  return *this;
}

OpPattern& OpPattern::allowMultipleUses() {
  spec_->multi_use = true;
  return *this;
}

OpPattern& OpPattern::ordered() {
  spec_->ordered = true;
  return *this;
}

OpPattern& OpPattern::allowExtraInputs() {
  spec_->extra_inputs = true;
  return *this;
}

bool OpPattern::matchNode(Node& node, MatchState& st) const {
  const Spec& s = *spec_;
  // Built only on failure: the no-match path should not allocate.
  auto at = [&node] { return "node '" + node.name() + "' (" + node.opType() + ")"; };
  const bool domain_ok = s.trait != OpTrait::None || s.any_domain || sameDomain(node.domain(), s.domain);
  if (!acceptsType(node) || !domain_ok) {
    return st.fail(at() + " is not a " + s.typeNames());
  }
  st.noteOpMatched();
  for (const auto& [pred, what] : s.predicates) {
    if (!pred(node)) return st.fail(at() + " does not have " + what);
  }
  if (!s.operands.empty()) {
    const size_t arity = s.extra_inputs ? s.operands.size() : effectiveArity(node);
    if (s.extra_inputs ? node.numInputs() < arity : arity != s.operands.size()) {
      return st.fail(at() + " has " + std::to_string(arity) + " inputs, the pattern expects " +
                     std::to_string(s.operands.size()));
    }
    std::vector<size_t> order(arity);
    for (size_t i = 0; i < arity; ++i) order[i] = i;
    const size_t mark = st.mark();
    if (!matchOperands(node, s.operands, order, st)) {
      st.rollback(mark);
      if (s.ordered || arity != 2 || !isCommutative(node)) return false;
      std::swap(order[0], order[1]);
      if (!matchOperands(node, s.operands, order, st)) {
        st.rollback(mark);
        return false;
      }
    }
  }
  st.bind(s.bind_slot, &node);
  return true;
}

namespace {

class OpLeaf : public ValuePattern::Impl {
 public:
  OpLeaf(OpPattern pattern, std::string type_names, bool multi_use)
      : pattern_(std::move(pattern)), op_type_(std::move(type_names)), multi_use_(multi_use) {}
  bool match(Value* v, MatchState& st) const override {
    if (!v) return st.fail("an omitted optional input is not a " + op_type_);
    Node* producer = v->producer();
    if (!producer) return st.fail(quoted(*v) + " is not computed by an op (expected " + op_type_ + ")");
    if (!pattern_.acceptsType(*producer)) {
      return st.fail(quoted(*v) + " comes from " + producer->opType() + " '" + producer->name() + "', not " +
                     op_type_);
    }
    if (!multi_use_) {
      const std::string problem = interiorUseProblem(*v);
      if (!problem.empty()) return st.fail(problem, /*guard=*/true);
    }
    return pattern_.matchNode(*producer, st);
  }

 private:
  OpPattern pattern_;
  std::string op_type_;
  bool multi_use_;
};

}  // namespace

OpPattern::operator ValuePattern() const {
  return ValuePattern(std::make_shared<OpLeaf>(*this, spec_->typeNames(), spec_->multi_use));
}

LogicalResult matchRoot(Node& root, const OpPattern& pattern, Rewriter& rw) {
  // A different root op type is the normal "not for me" case, not a diagnosis.
  if (!pattern.acceptsType(root)) return failure();
  MatchState st;
  if (pattern.matchNode(root, st)) return success();
  if (!st.failureIsNews()) return failure();
  return rw.notifyMatchFailure(root, st.reason());
}

}  // namespace m
}  // namespace npuc
