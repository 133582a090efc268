// extract_common_factor: Concat(f(x1), f(x2), ...) -> f(Concat(x1, x2, ...)) when every Concat input
// is the same elementwise op f with the same constants and attributes (so one NPU task instead of
// several). The constants must not vary along the concat axis (they broadcast there), each f must
// keep its input's shape, and its result must feed only this Concat.
//
// Repeated identical ops on one value (x -> Relu twice) are merged by
// common_subexpression_elimination, which uses the same equivalence (passes/core/equivalence.h).
// This pass cooperates rather than duplicates: it declines a Concat that reads the same value, or
// equivalent computations of the same value, more than once, because moving f after the Concat
// would then compute f(x) once per copy where CSE computes it once.
//
// It also declines when f is an activation right after a Conv / Gemm / MatMul whose only reader it
// is: there it costs nothing (the NPU's fusion rules and the host's oneDNN post-ops apply it to the
// MAC op's output), and after the Concat it would be a task of its own (yolov5s's C3 blocks:
// Concat(Relu(Conv), Relu(Conv))).
#include <algorithm>

#include "opset/op_traits.h"
#include "passes/core/equivalence.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

// Index of the only non-constant input, or -1.
int variableInput(const Node& n) {
  int found = -1;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    const Value* in = n.input(i);
    if (!in || in->isConstant()) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

// True if every constant input of `n` has size 1 along output axis `axis` of rank `rank`.
bool constantsInvariantAlong(const Node& n, int64_t axis, int64_t rank) {
  for (const Value* in : n.inputs()) {
    if (!in || !in->isConstant()) continue;
    const Tensor& c = in->constant();
    if (c.rank() > rank) return false;
    const int64_t d = axis - (rank - c.rank());
    if (d >= 0 && c.dim(d) != 1) return false;
  }
  return true;
}

bool onlyUsedBy(const Value& v, const Node& user) {
  if (v.isGraphOutput()) return false;
  return std::all_of(v.uses().begin(), v.uses().end(), [&](const Use& u) { return u.user == &user; });
}

// True if `act` (reading `x`) is an activation fused into the MAC op producing x: x's only reader.
bool fusesIntoProducer(const Node& act, const Value& x) {
  const Node* mac = x.producer();
  return mac && opTraits(act).has(OpTrait::ElementwiseUnary) && opTraits(*mac).has(OpTrait::MacGeometry) &&
         onlyUsedBy(x, act);
}

class HoistOpOverConcat : public RewritePattern {
 public:
  HoistOpOverConcat() : RewritePattern("hoist_op_over_concat", {"Concat"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (root.numInputs() < 2 || !root.output()->shapeIsStatic()) return failure();
    const int64_t rank = root.output()->rank();
    const int64_t axis =
        root.attrs().i("axis", 0) < 0 ? root.attrs().i("axis", 0) + rank : root.attrs().i("axis", 0);
    Node* first = root.input(0) ? root.input(0)->producer() : nullptr;
    // An elementwise op commutes with Concat: f(concat(a, b)) == concat(f(a), f(b)) given constant
    // other operands that do not vary along the concat axis (checked below).
    if (!first || !opTraits(*first).elementwise()) return failure();
    const int k = variableInput(*first);
    if (k < 0)
      return rw.notifyMatchFailure(root, "'" + first->name() + "' does not have exactly one variable input");
    std::vector<Value*> xs;
    for (size_t i = 0; i < root.numInputs(); ++i) {
      Value* in = root.input(i);
      Node* p = in ? in->producer() : nullptr;
      if (!p || !equivalentNodes(*first, *p, static_cast<size_t>(k)) || variableInput(*p) != k) {
        return rw.notifyMatchFailure(root, "input " + std::to_string(i) + " is not the same " +
                                               first->opType() +
                                               " with the same constants and attributes as input 0");
      }
      if (!onlyUsedBy(*in, root)) {
        return rw.notifyMatchFailure(root, "'" + in->name() + "' is also used outside this Concat");
      }
      Value* x = p->input(static_cast<size_t>(k));
      if (fusesIntoProducer(*p, *x)) {
        return rw.notifyMatchFailure(root, "'" + p->name() + "' fuses into the " + x->producer()->opType() +
                                               " '" + x->producer()->name() +
                                               "' before it; after the Concat it would not");
      }
      if (!sameStaticShape(*x, *in)) {
        return rw.notifyMatchFailure(root, "'" + p->name() + "' broadcasts its input to a new shape");
      }
      if (std::find(xs.begin(), xs.end(), x) != xs.end()) {
        return rw.notifyMatchFailure(
            root, "'" + x->name() + "' is concatenated more than once; CSE computes the op once for it");
      }
      xs.push_back(x);
    }
    if (!constantsInvariantAlong(*first, axis, rank)) {
      return rw.notifyMatchFailure(
          root, "constants of '" + first->name() + "' vary along concat axis " + std::to_string(axis));
    }
    const Value* x0 = xs.front();
    Node* concat =
        rw.createTyped(x0->dtype(), root.output()->shape(), "Concat", xs, root.attrs(), root.name());
    std::vector<Value*> ins = first->inputs();
    ins[static_cast<size_t>(k)] = concat->output();
    Node* op = rw.createCopy(*first, ins, root.output()->dtype(), root.output()->shape(), first->attrs());
    rw.replaceOp(&root, {op->output()});
    return success();
  }
};

class ExtractCommonFactorPass : public PatternPass {
 public:
  const char* name() const override { return "extract_common_factor"; }
  const char* description() const override {
    return "moves the same elementwise op on every Concat input after the Concat";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<HoistOpOverConcat>(); }
};

}  // namespace

std::unique_ptr<Pass> createExtractCommonFactorPass() {
  return std::make_unique<ExtractCommonFactorPass>();
}

}  // namespace npuc
