#include "passes/fusion_util.h"

#include <cmath>

#include "opset/op_traits.h"
#include "opset/registry.h"
#include "passes/core/ir_helpers.h"

namespace npuc {
namespace fusion {

Node* producerIs(const Value* v, const std::string& op_type) {
  if (!v || !v->producer()) return nullptr;
  Node* p = v->producer();
  return p->opType() == op_type && p->domain().empty() ? p : nullptr;
}

bool isView(const Node* n) {
  return n && opTraits(*n).has(OpTrait::ShapeOnly);
}

Node* soleConsumer(const Value* v) {
  if (!v || v->isGraphOutput() || v->uses().size() != 1) return nullptr;
  return v->uses().front().user;
}

Value* otherOperand(const Node& binary, const Value* one) {
  if (binary.numInputs() != 2) return nullptr;
  if (binary.input(0) == one) return binary.input(1);
  if (binary.input(1) == one) return binary.input(0);
  return nullptr;
}

bool isStaticFloat32(const Value* v) {
  return v && v->dtype() == DType::Float32 && v->shapeIsStatic();
}

std::optional<double> floatScalar(const Value* v) {
  if (!v || !v->isConstant() || !isFloating(v->dtype()) || v->constant().numel() != 1) return std::nullopt;
  return v->constant().doubleAt(0);
}

bool scalarNear(const Value* v, double expected, double rel_tol) {
  const auto s = floatScalar(v);
  return s && std::abs(*s - expected) <= rel_tol * std::abs(expected);
}

std::optional<std::vector<int64_t>> reduceAxes(const Node& reduce) {
  const Value* data = reduce.input(0);
  if (!data || !data->hasShape()) return std::nullopt;
  std::vector<int64_t> axes;
  if (const Value* in = reduce.input(1)) {
    auto c = constantInts(in);
    if (!c) return std::nullopt;
    axes = *c;
  } else {
    axes = reduce.attrs().ints("axes", {});
  }
  if (axes.empty()) {
    if (reduce.attrs().i("noop_with_empty_axes", 0) != 0) return axes;
    for (int64_t i = 0; i < data->rank(); ++i) axes.push_back(i);
  }
  return normalizedAxes(axes, data->rank());
}

DType castTarget(const Node& cast) {
  return static_cast<DType>(cast.attrs().i("to", 0));
}

Node* createNpucOp(Rewriter& rw, DType dtype, const Shape& shape, const std::string& op_type,
                   const std::vector<Value*>& inputs, const Attributes& attrs, const std::string& name_hint) {
  Node* node = rw.createTyped(dtype, shape, op_type, inputs, attrs, name_hint);
  node->setDomain(kNpucDomain);
  rw.notifyModified(node);
  return node;
}

}  // namespace fusion
}  // namespace npuc
