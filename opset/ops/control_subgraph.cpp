#include "opset/ops/control_subgraph.h"

namespace npuc {
namespace control {

std::string tag(const Node& node) { return "node '" + node.name() + "' (" + node.opType() + ")"; }

SubgraphBinding bindInput(const Node& node, size_t i, const std::string& name) {
  const Value* v = node.input(i);
  if (!v) throw ShapeError(tag(node) + ": input " + std::to_string(i) + " is missing");
  if (!v->shapeIsStatic()) {
    throw ShapeError(tag(node) + ": input " + std::to_string(i) + " ('" + v->name() +
                     "') needs a static shape to bind into the sub-graph");
  }
  SubgraphBinding b;
  b.name = name;
  b.dtype = v->dtype();
  b.shape = v->shape();
  if (v->isConstant()) b.constant = &v->constant();
  return b;
}

std::vector<SubgraphBinding> implicitBindings(const Node& node) {
  const std::vector<std::string> names = implicitInputNames(node);
  const size_t first = numExplicitInputs(node);
  std::vector<SubgraphBinding> out;
  for (size_t k = 0; k < names.size(); ++k) out.push_back(bindInput(node, first + k, names[k]));
  return out;
}

void requireStatic(const Node& node, const std::string& attr, const Value& v) {
  if (!v.shapeIsStatic()) {
    throw ShapeError(tag(node) + ": output '" + v.name() + "' of sub-graph '" + attr + "' has shape " +
                     (v.hasShape() ? shapeStr(v.shape()) : std::string("unknown")) +
                     "; npuc needs static shapes inside control flow");
  }
}

void requireSameType(const Node& node, const std::string& what, const Value& v, DType dtype, const Shape& shape) {
  if (v.dtype() != dtype || v.shape() != shape) {
    throw ShapeError(tag(node) + ": " + what + " is " + dtypeName(v.dtype()) + " " + shapeStr(v.shape()) +
                     " but must be " + dtypeName(dtype) + " " + shapeStr(shape) +
                     " (npuc compiles static shapes: it cannot change between branches or iterations)");
  }
}

SubgraphRunner::SubgraphRunner(const Node& node, std::unique_ptr<Graph> g) {
  const size_t first = numExplicitInputs(node);
  for (size_t i = first; i < node.numInputs(); ++i) {
    if (!node.input(i)->isConstant()) implicit_positions_.push_back(i);
  }
  exec_ = std::make_unique<Executor>(*g);
}

void SubgraphRunner::run(const std::vector<TensorView>& formal, const std::vector<TensorView>& node_inputs,
                         const std::vector<TensorView>& outputs) const {
  std::vector<TensorView> in = formal;
  for (size_t p : implicit_positions_) in.push_back(node_inputs[p]);
  exec_->run(in, outputs);
}

bool readCond(const TensorView& v, const std::string& node_tag, const char* what) {
  if (v.numel() != 1) {
    throw InputError(node_tag + ": " + what + " must hold one value, got shape " + shapeStr(v.shape));
  }
  switch (v.dtype) {
    case DType::Bool: return *v.as<const bool>();
    case DType::Int64: return *v.as<const int64_t>() != 0;
    case DType::Int32: return *v.as<const int32_t>() != 0;
    case DType::Float32: return *v.as<const float>() != 0.0f;
    default: break;
  }
  throw InputError(node_tag + ": " + what + " has dtype " + dtypeName(v.dtype) + "; it must be bool");
}

}  // namespace control
}  // namespace npuc
