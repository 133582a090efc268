#include "quant/graph/standard_op_expansion.h"

#include <cmath>
#include <vector>

#include "common/error.h"
#include "opset/eval.h"
#include "opset/gelu.h"
#include "opset/registry.h"

namespace npuc::quant {

namespace {

// Constants of the formulas in opset/ops/npuc_ops.cpp (the kernels this expansion replaces).
constexpr float kInvSqrt2 = static_cast<float>(kGeluInvSqrt2);
constexpr float kSqrt2OverPi = static_cast<float>(::npuc::kGeluSqrt2OverPi);
constexpr float kCubic = static_cast<float>(::npuc::kGeluCubic);

bool isNpuc(const Node& n, const char* op) {
  return n.domain() == kNpucDomain && n.opType() == op;
}
bool isOnnx(const Node& n, const char* op) {
  return n.domain().empty() && n.opType() == op;
}

bool needsExpansion(const Node& n) {
  return n.domain() == kNpucDomain || isOnnx(n, "Gelu") || isOnnx(n, "Mish");
}

// Builds the standard-op chain of one node right before it, inferring each new value's type.
class Expansion {
 public:
  Expansion(Graph& g, Node& n) : g_(g), n_(n) {}

  Node* node(const std::string& op, const std::vector<Value*>& inputs, const Attributes& attrs = {},
             size_t num_outputs = 1) {
    Node* created = g_.createNode(op, inputs, num_outputs, n_.name() + "/" + op);
    created->setName(created->output(0)->name());  // unique, since value names are
    created->attrs() = attrs;
    created->moveBefore(&n_);
    inferNode(*created);
    return created;
  }
  Value* op(const std::string& op, const std::vector<Value*>& inputs, const Attributes& attrs = {}) {
    return node(op, inputs, attrs)->output(0);
  }
  Value* scalar(float v) { return g_.addConstant(Tensor::scalar<float>(v), n_.name() + "/const"); }

  // The node's output becomes `result` (which takes its name); the node is erased.
  void finish(const std::vector<Value*>& results) {
    for (size_t i = 0; i < results.size(); ++i) {
      Value* out = n_.output(i);
      const std::string name = out->name();
      const bool renamed_by_graph = out->isGraphOutput();  // replaceAllUsesWith hands the name over
      out->replaceAllUsesWith(results[i]);
      if (!renamed_by_graph) {
        out->setName(g_.uniqueName(name + "_replaced"));
        results[i]->setName(name);
      }
    }
    g_.eraseNode(&n_);
  }

 private:
  Graph& g_;
  Node& n_;
};

Value* gelu(Expansion& e, Value* x, const std::string& approximate) {
  Value* half_x = e.op("Mul", {x, e.scalar(0.5f)});
  Value* gate = nullptr;
  if (approximate == "tanh") {
    Value* cube = e.op("Mul", {e.op("Mul", {x, x}), x});
    Value* inner = e.op("Add", {x, e.op("Mul", {cube, e.scalar(kCubic)})});
    gate = e.op("Tanh", {e.op("Mul", {inner, e.scalar(kSqrt2OverPi)})});
  } else {
    gate = e.op("Erf", {e.op("Mul", {x, e.scalar(kInvSqrt2)})});
  }
  return e.op("Mul", {half_x, e.op("Add", {gate, e.scalar(1.0f)})});
}

Value* glu(Expansion& e, const Node& n) {
  Attributes split;
  split.set("axis", n.attrs().i("axis", -1));
  split.set("num_outputs", int64_t{2});  // npuc's canonical Split; the exporter writes the opset-13 form
  Node* halves = e.node("Split", {n.input(0)}, split, 2);
  return e.op("Mul", {halves->output(0), e.op("Sigmoid", {halves->output(1)})});
}

// x / sqrt(mean(x^2 over dims axis..last) + epsilon) * scale.
Value* rmsNorm(Graph& g, Expansion& e, const Node& n) {
  Value* x = n.input(0);
  const int64_t rank = x->rank();
  const int64_t axis = normalizeAxis(n.attrs().i("axis", -1), rank, "RMSNorm axis");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  Attributes keep;
  keep.set("keepdims", int64_t{1});
  Value* axes_value =
      g.addConstant(Tensor::fromVector(axes, {static_cast<int64_t>(axes.size())}), n.name() + "/axes");
  Value* mean = e.op("ReduceMean", {e.op("Mul", {x, x}), axes_value}, keep);
  Value* rms = e.op("Sqrt", {e.op("Add", {mean, e.scalar(n.attrs().f("epsilon", 1e-5f))})});
  return e.op("Mul", {e.op("Div", {x, rms}), n.input(1)});
}

void expandNode(Graph& g, Node& n) {
  Expansion e(g, n);
  Value* x = n.input(0);
  if (n.opType() == "Gelu") {
    e.finish({gelu(e, x, n.attrs().s("approximate", "none"))});
  } else if (isNpuc(n, "SiLU")) {
    e.finish({e.op("Mul", {x, e.op("Sigmoid", {x})})});
  } else if (isOnnx(n, "Mish")) {
    e.finish({e.op("Mul", {x, e.op("Tanh", {e.op("Softplus", {x})})})});
  } else if (isNpuc(n, "GLU")) {
    e.finish({glu(e, n)});
  } else if (isNpuc(n, "RMSNorm")) {
    e.finish({rmsNorm(g, e, n)});
  }
}

}  // namespace

void expandToStandardOps(Graph& graph) {
  std::vector<Node*> todo;
  for (Node* n : graph.nodes()) {
    if (!needsExpansion(*n)) continue;
    const bool known = n->opType() == "Gelu" || isNpuc(*n, "SiLU") || isOnnx(*n, "Mish") ||
                       isNpuc(*n, "GLU") || isNpuc(*n, "RMSNorm");
    if (!known) {
      throw UnsupportedOpError("node '" + n->name() + "' (" + n->domain() + " " + n->opType() +
                               ") has no standard ONNX form for export" +
                               (n->opType() == "ConvAct"
                                    ? " (ConvAct is the host executor's fusion; export the "
                                      "graph before it)"
                                    : ""));
    }
    todo.push_back(n);
  }
  for (Node* n : todo) expandNode(graph, *n);
}

}  // namespace npuc::quant
