// If(cond) with then_branch / else_branch sub-graphs. A constant cond is inlined at import
// (passes/inline_control_flow.cpp); what reaches this file is an If whose condition comes from the
// data, run on the host: both branches are compiled, and must give the same static types (npuc
// compiles static shapes, so an If cannot change its output shape with the data).
#include "opset/ops/control_subgraph.h"

namespace npuc {

namespace {

using namespace control;

void checkCondType(const Node& node, const InferContext& ctx) {
  const Shape& s = ctx.inputShape(0);
  if (shapeNumel(s) != 1) {
    throw ShapeError(tag(node) + ": cond must hold one value, got shape " + shapeStr(s));
  }
}

void inferIf(InferContext& ctx) {
  Node& node = ctx.node();
  if (numExplicitInputs(node) != 1) {
    throw ShapeError(tag(node) + ": If takes exactly one input (cond), got " +
                     std::to_string(numExplicitInputs(node)));
  }
  checkCondType(node, ctx);
  const auto implicit = implicitBindings(node);
  std::unique_ptr<Graph> then_g, else_g;
  const Tensor* c = ctx.constInput(0);
  // A constant cond needs only its branch (the other may not even fit these shapes).
  if (!c || c->intAt(0) != 0) then_g = buildSubgraph(node, "then_branch", {}, implicit);
  if (!c || c->intAt(0) == 0) else_g = buildSubgraph(node, "else_branch", {}, implicit);
  const Graph& first = then_g ? *then_g : *else_g;
  const char* first_name = then_g ? "then_branch" : "else_branch";
  if (first.outputs().size() != ctx.numOutputs()) {
    throw ShapeError(tag(node) + ": " + first_name + " has " + std::to_string(first.outputs().size()) +
                     " outputs but the node has " + std::to_string(ctx.numOutputs()));
  }
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    const Value& a = *first.outputs()[i];
    requireStatic(node, first_name, a);
    if (then_g && else_g) {
      if (else_g->outputs().size() != ctx.numOutputs()) {
        throw ShapeError(tag(node) + ": else_branch has " + std::to_string(else_g->outputs().size()) +
                         " outputs but then_branch has " + std::to_string(ctx.numOutputs()));
      }
      const Value& b = *else_g->outputs()[i];
      requireStatic(node, "else_branch", b);
      requireSameType(node, "output " + std::to_string(i) + " of else_branch", b, a.dtype(), a.shape());
    }
    ctx.setOutput(i, a.dtype(), a.shape());
  }
}

class IfKernel : public Kernel {
 public:
  explicit IfKernel(const KernelContext& ctx) : tag_(tag(ctx.node)) {
    const auto implicit = implicitBindings(ctx.node);
    then_ = std::make_unique<SubgraphRunner>(ctx.node, buildSubgraph(ctx.node, "then_branch", {}, implicit));
    else_ = std::make_unique<SubgraphRunner>(ctx.node, buildSubgraph(ctx.node, "else_branch", {}, implicit));
  }
  void run(const KernelIO& io) const override {
    const bool cond = readCond(io.inputs[0], tag_, "cond");
    (cond ? then_ : else_)->run({}, io.inputs, io.outputs);
  }

 private:
  std::string tag_;  // names the node in run-time errors
  std::unique_ptr<SubgraphRunner> then_, else_;
};

}  // namespace

void registerIfOp(OpRegistry& reg) {
  reg.add("If")
      .inputs(1, -1)
      .outputs(1, kMaxControlOutputs)
      .infer(inferIf)
      .kernel([](const KernelContext& c) { return std::make_unique<IfKernel>(c); })
      .quantClass(QuantClass::Float)
      .cpuOnly("its condition depends on the data (an If with a condition known at compile time is inlined)")
      .doc("runs then_branch or else_branch by a one-element condition; constant conditions are inlined at "
           "import, data-dependent ones run on the CPU (both branches must give the same static types)");
}

}  // namespace npuc
