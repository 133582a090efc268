// fuse_activations: activations that exporters write as products of x and a gate become one op.
//
//   x * Sigmoid(x)                                   -> ai.npuc SiLU
//   x * Tanh(Softplus(x))                            -> Mish
//   x * HardSigmoid(x; alpha = 1/6, beta = 1/2)      -> HardSwish
//   x * Clip(x + 3, 0, 6) / 6   (or * 1/6)           -> HardSwish
//   0.5 * x * (1 + Erf(x / sqrt 2))  (or x * 1/sqrt 2)             -> ai.npuc Gelu(approximate="none")
//   0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))        -> ai.npuc Gelu(approximate="tanh")
//
// The root Mul / Div is flattened into a product: one-use Mul nodes and Divs by a scalar constant
// are opened up, scalar constants are multiplied into one scale, everything else is a factor.
// A fusion needs exactly two factors, x and a recognized gate of x, and the scale the formula
// asks for. This covers every placement of the 0.5 or 1/6 (0.5*x*g, x*(0.5*g), (x*g)/2, ...) and
// both operand orders without one pattern per spelling.
//
// Constants are compared with a relative tolerance of kConstantTolerance = 1e-4: loose enough for
// float32-rounded or 5-digit literals (0.70711, 1.4142135, 0.79788456), tight enough that a
// deliberately different constant (0.7 for 1/sqrt 2) is refused and reported.
// The fused kernels evaluate the formula in another order: level 3 only.
#include <cmath>

#include "opset/gelu.h"
#include "opset/registry.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"

namespace npuc {
namespace {

using fusion::producerIs;

constexpr double kConstantTolerance = 1e-4;
constexpr double kSqrt2 = kGeluSqrt2;
constexpr double kSqrt2OverPi = kGeluSqrt2OverPi;  // opset/gelu.h
constexpr int kMaxProductDepth = 3;                // nested Muls opened up below the root

bool near(double got, double want) {
  return std::abs(got - want) <= kConstantTolerance * std::abs(want);
}

// x * y * ... * scale, as found below a root Mul/Div.
struct Product {
  std::vector<Value*> factors;
  double scale = 1.0;
  std::vector<Value*> interior;  // outputs of the opened-up Mul/Div nodes
};

bool isDivByScalar(const Node& n) {
  return n.opType() == "Div" && n.domain().empty() && fusion::floatScalar(n.input(1)).has_value();
}

void addFactors(const Node& n, Product& p, int depth);

void addOperand(Value* v, Product& p, int depth) {
  if (auto c = fusion::floatScalar(v)) {
    p.scale *= *c;
    return;
  }
  Node* prod = v->producer();
  const bool openable = prod && (producerIs(v, "Mul") || isDivByScalar(*prod)) && fusion::soleConsumer(v) &&
                        prod->input(0) != prod->input(1);
  if (openable && depth < kMaxProductDepth) {
    p.interior.push_back(v);
    addFactors(*prod, p, depth + 1);
    return;
  }
  p.factors.push_back(v);
}

void addFactors(const Node& n, Product& p, int depth) {
  if (n.opType() == "Mul") {
    addOperand(n.input(0), p, depth);
    addOperand(n.input(1), p, depth);
  } else {  // Div by a scalar constant
    addOperand(n.input(0), p, depth);
    p.scale /= *fusion::floatScalar(n.input(1));
  }
}

// A recognized gate g(x) and what x * g(x) * scale fuses into.
struct Activation {
  const char* name = nullptr;  // for reports: "GELU", "SiLU", ...
  const char* op = nullptr;
  bool npuc_domain = false;
  Attributes attrs;
  double scale = 1.0;            // the product's scalar factor the formula requires
  std::vector<Value*> interior;  // values of the gate absorbed by the fusion
  std::string problem;           // recognized, but a constant is off
};

// True if `v` is x * c or x / (1/c) for a scalar c near `c`.
bool isScaledBy(const Value* v, const Value* x, double c) {
  Node* n = v ? v->producer() : nullptr;
  if (!n || !n->domain().empty() || n->numInputs() != 2) return false;
  if (n->opType() == "Mul") {
    const Value* k = fusion::otherOperand(*n, x);
    return k && fusion::scalarNear(k, c, kConstantTolerance);
  }
  return n->opType() == "Div" && n->input(0) == x &&
         fusion::scalarNear(n->input(1), 1.0 / c, kConstantTolerance);
}

// x^3 as Pow(x, 3), x*x*x in either association.
bool isCube(const Value* v, const Value* x) {
  Node* n = v ? v->producer() : nullptr;
  if (!n || !n->domain().empty()) return false;
  if (n->opType() == "Pow") return n->input(0) == x && fusion::scalarNear(n->input(1), 3.0, 0.0);
  if (n->opType() != "Mul") return false;
  const Value* other = fusion::otherOperand(*n, x);
  Node* sq = other ? producerIs(other, "Mul") : nullptr;
  return sq && sq->input(0) == x && sq->input(1) == x;
}

// Add(gate, 1) with gate one of Erf(x / sqrt 2) or Tanh(sqrt(2/pi) * (x + 0.044715 x^3)).
bool matchGeluGate(Node& add, Value* x, Activation& a) {
  Value* one = nullptr;
  Value* inner = nullptr;
  for (size_t i = 0; i < 2 && !inner; ++i) {
    if (fusion::scalarNear(add.input(i), 1.0, 0.0)) {
      one = add.input(i);
      inner = add.input(1 - i);
    }
  }
  if (!one || !inner) return false;
  a.name = "GELU";
  a.op = "Gelu";
  a.npuc_domain = true;
  a.scale = 0.5;
  a.interior.push_back(inner);
  if (Node* erf = producerIs(inner, "Erf")) {
    a.attrs.set("approximate", std::string("none"));
    a.interior.push_back(erf->input(0));
    if (isScaledBy(erf->input(0), x, 1.0 / kSqrt2)) return true;
    Node* arg = erf->input(0)->producer();
    if (!arg || (arg->input(0) != x && arg->input(1) != x)) return false;
    a.problem = "the Erf argument '" + erf->input(0)->name() + "' is not x / sqrt(2)";
    return true;
  }
  Node* tanh = producerIs(inner, "Tanh");
  if (!tanh) return false;
  a.attrs.set("approximate", std::string("tanh"));
  Node* outer = producerIs(tanh->input(0), "Mul");
  Node* sum = nullptr;
  for (size_t i = 0; outer && i < 2 && !sum; ++i) {
    if (fusion::scalarNear(outer->input(1 - i), kSqrt2OverPi, kConstantTolerance))
      sum = producerIs(outer->input(i), "Add");
  }
  const Value* cubic = sum ? fusion::otherOperand(*sum, x) : nullptr;
  Node* scaled = cubic ? producerIs(cubic, "Mul") : nullptr;
  Value* cube = nullptr;
  for (size_t i = 0; scaled && i < 2 && !cube; ++i) {
    if (fusion::scalarNear(scaled->input(1 - i), kGeluCubic, kConstantTolerance) &&
        isCube(scaled->input(i), x))
      cube = scaled->input(i);
  }
  if (!cube) return false;
  a.interior.insert(a.interior.end(), {outer->output(), sum->output(), scaled->output(), cube});
  if (Node* c = cube->producer(); c->opType() == "Mul") a.interior.push_back(fusion::otherOperand(*c, x));
  return true;
}

// Clip(x + 3, 0, 6): bounds as inputs (opset 11+) or attributes (older exports).
bool matchRelu6OfXPlus3(Node& clip, Value* x, Activation& a) {
  Node* add = producerIs(clip.input(0), "Add");
  const Value* three = add ? fusion::otherOperand(*add, x) : nullptr;
  if (!three || !fusion::scalarNear(three, 3.0, kConstantTolerance)) return false;
  const double lo =
      clip.input(1) ? fusion::floatScalar(clip.input(1)).value_or(NAN) : clip.attrs().f("min", NAN);
  const double hi =
      clip.input(2) ? fusion::floatScalar(clip.input(2)).value_or(NAN) : clip.attrs().f("max", NAN);
  a.name = "HardSwish";
  a.op = "HardSwish";
  a.scale = 1.0 / 6.0;
  a.interior.push_back(add->output());
  if (lo != 0.0 || hi != 6.0) a.problem = "Clip '" + clip.name() + "' does not clip to [0, 6]";
  return true;
}

// Recognizes g in x * g(x); false if `gate` is not a gate of `x`.
bool recognizeGate(Value* gate, Value* x, Activation& a) {
  Node* g = gate->producer();
  if (!g || !g->domain().empty()) return false;
  a.interior.push_back(gate);
  const std::string& op = g->opType();
  if (op == "Sigmoid" && g->input(0) == x) {
    a.name = "SiLU";
    a.op = "SiLU";
    a.npuc_domain = true;
    return true;
  }
  if (op == "HardSigmoid" && g->input(0) == x) {
    a.name = a.op = "HardSwish";
    if (!near(g->attrs().f("alpha", 0.2f), 1.0 / 6.0) || !near(g->attrs().f("beta", 0.5f), 0.5))
      a.problem = "HardSigmoid '" + g->name() + "' does not have alpha = 1/6 and beta = 0.5";
    return true;
  }
  if (op == "Tanh") {
    Node* sp = producerIs(g->input(0), "Softplus");
    if (!sp || sp->input(0) != x) return false;
    a.name = a.op = "Mish";
    a.interior.push_back(sp->output());
    return true;
  }
  if (op == "Clip") return matchRelu6OfXPlus3(*g, x, a);
  if (op == "Add") return matchGeluGate(*g, x, a);
  return false;
}

class FuseGatedActivation : public RewritePattern {
 public:
  FuseGatedActivation()
      : RewritePattern("fuse_gated_activation", {"Mul", "Div"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (root.numInputs() != 2 || (root.opType() == "Div" && !isDivByScalar(root))) return failure();
    Product p;
    addFactors(root, p, 0);
    if (p.factors.size() != 2) return failure();
    for (size_t i = 0; i < 2; ++i) {
      Value* x = p.factors[i];
      Activation a;
      if (!recognizeGate(p.factors[1 - i], x, a)) continue;
      return fuse(root, x, p, a, rw);
    }
    return failure();
  }

 private:
  static LogicalResult fuse(Node& root, Value* x, const Product& p, Activation& a, Rewriter& rw) {
    auto refuse = [&](const std::string& why) {
      return rw.notifyMatchFailure(root,
                                   std::string(a.name) + " at node '" + root.name() + "' not fused: " + why);
    };
    if (!a.problem.empty()) return refuse(a.problem);
    // A gate without a constant (SiLU, Mish, ...) inside a scaled product is fused when the
    // driver reaches the inner Mul; only a formula that needs a constant reports a wrong one.
    if (!near(p.scale, a.scale) && a.scale == 1.0) return failure();
    if (!near(p.scale, a.scale)) {
      return refuse("the product's constant factor " + std::to_string(p.scale) + " is not " +
                    std::to_string(a.scale));
    }
    if (!fusion::isStaticFloat32(x) || !sameType(*x, *root.output()))
      return refuse("'" + x->name() + "' is not a float32 tensor of the result's shape");
    std::vector<Value*> interior = p.interior;
    interior.insert(interior.end(), a.interior.begin(), a.interior.end());
    for (const Value* v : interior) {
      if (std::string problem = m::interiorUseProblem(*v); !problem.empty()) return refuse(problem);
    }
    rw.setInsertionPointBefore(&root);
    Node* fused = a.npuc_domain
                      ? fusion::createNpucOp(rw, x->dtype(), x->shape(), a.op, {x}, a.attrs, root.name())
                      : rw.createLike(*x, a.op, {x}, a.attrs, root.name());
    rw.replaceOp(&root, {fused->output()});
    return success();
  }
};

class FuseActivationsPass : public PatternPass {
 public:
  const char* name() const override { return "fuse_activations"; }
  const char* description() const override {
    return "x * gate(x) spellings -> Gelu (erf, tanh), SiLU, HardSwish, Mish";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<FuseGatedActivation>(); }
};

}  // namespace

std::unique_ptr<Pass> createFuseActivationsPass() {
  return std::make_unique<FuseActivationsPass>();
}

}  // namespace npuc
