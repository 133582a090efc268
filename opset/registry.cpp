#include "opset/registry.h"

#include <algorithm>

#include "opset/custom_ops.h"

namespace npuc {

// ---------------------------------------------------------------- contexts

const Shape& InferContext::inputShape(size_t i) const {
  Value* v = node_.input(i);
  if (!v) throw ShapeError("input " + std::to_string(i) + " is missing");
  if (!v->hasShape())
    throw ShapeError("input " + std::to_string(i) + " ('" + v->name() + "') has an unknown shape");
  return v->shape();
}

DType InferContext::inputDType(size_t i) const {
  Value* v = node_.input(i);
  if (!v) throw ShapeError("input " + std::to_string(i) + " is missing");
  return v->dtype();
}

const Tensor* InferContext::constInput(size_t i) const {
  Value* v = node_.input(i);
  return v && v->isConstant() ? &v->constant() : nullptr;
}

const Tensor& InferContext::requireConstInput(size_t i, const char* what) const {
  const Tensor* t = constInput(i);
  if (!t) {
    throw ShapeError(std::string(what) + " (input " + std::to_string(i) +
                     ") must be a constant once input shapes are fixed");
  }
  return *t;
}

const Tensor* KernelContext::constInput(size_t i) const {
  Value* v = node.input(i);
  return v && v->isConstant() ? &v->constant() : nullptr;
}

// ---------------------------------------------------------------- builder

SchemaBuilder& SchemaBuilder::inputs(int min, int max) {
  s_.min_inputs = min;
  s_.max_inputs = max;
  return *this;
}
SchemaBuilder& SchemaBuilder::outputs(int min, int max) {
  s_.min_outputs = min;
  s_.max_outputs = max;
  return *this;
}
SchemaBuilder& SchemaBuilder::infer(InferFn f) {
  s_.infer = std::move(f);
  return *this;
}
SchemaBuilder& SchemaBuilder::kernel(KernelFactory f) {
  s_.make_kernel = std::move(f);
  return *this;
}
SchemaBuilder& SchemaBuilder::types(std::vector<DType> t) {
  s_.dtypes = std::move(t);
  return *this;
}
SchemaBuilder& SchemaBuilder::notFoldable() {
  s_.foldable = false;
  return *this;
}
SchemaBuilder& SchemaBuilder::since(int opset) {
  s_.since_opset = opset;
  return *this;
}
SchemaBuilder& SchemaBuilder::doc(std::string d) {
  s_.doc = std::move(d);
  return *this;
}
SchemaBuilder& SchemaBuilder::traits(OpTrait t) {
  s_.traits.flags = s_.traits.flags | t;
  return *this;
}
SchemaBuilder& SchemaBuilder::boundedOutput(std::function<int(const Node&)> axis_of) {
  s_.bounded_axis = std::move(axis_of);
  return *this;
}
SchemaBuilder& SchemaBuilder::cpuOnly(std::string reason) {
  s_.traits.cpu_reason = std::move(reason);
  return *this;
}
SchemaBuilder& SchemaBuilder::quantClass(QuantClass c) {
  s_.traits.quant_class = c;
  return *this;
}

// ---------------------------------------------------------------- registry

namespace {
std::string key(const std::string& domain, const std::string& op) {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  return d + "::" + op;
}
}  // namespace

SchemaBuilder OpRegistry::add(const std::string& op_type, const std::string& domain) {
  auto& slot = ops_[key(domain, op_type)];
  if (!slot) {
    slot = std::make_unique<OpSchema>();
    slot->op_type = op_type;
    slot->domain = domain == "ai.onnx" ? "" : domain;
    order_.push_back(slot.get());
  }
  return SchemaBuilder(*this, *slot);
}

const OpSchema* OpRegistry::find(const std::string& op_type, const std::string& domain) const {
  auto it = ops_.find(key(domain, op_type));
  if (it != ops_.end()) return it->second.get();
  return nullptr;
}

const OpSchema* OpRegistry::find(const Node& node) const {
  if (const OpSchema* s = find(node.opType(), node.domain())) return s;
  const Graph* g = node.graph();
  return g && g->custom_ops ? g->custom_ops->find(node.opType()) : nullptr;
}

const OpSchema& OpRegistry::require(const Node& node) const {
  const OpSchema* s = find(node);
  if (!s) {
    throw UnsupportedOpError("unsupported op '" + (node.domain().empty() ? "" : node.domain() + ".") +
                             node.opType() + "' at node '" + node.name() +
                             "'; see docs/supported_ops.md or `npuc ops` for the supported list, or register "
                             "it as a custom op (Toolkit.reg_custom_op)");
  }
  return *s;
}

std::vector<std::string> OpRegistry::opTypes() const {
  std::vector<std::string> out;
  for (auto& [k, s] : ops_) out.push_back(s->domain.empty() ? s->op_type : s->domain + "." + s->op_type);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const OpSchema*> OpRegistry::schemas() const {
  return order_;
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerReductionOps(r);
    registerNnOps(r);
    registerDataMovementOps(r);
    registerScatterOps(r);
    registerNpucOps(r);
    registerDetectOps(r);
    registerAttnOps(r);
    registerQuantizedOps(r);
    registerControlFlowOps(r);
    registerRnnOps(r);
    return r;
  }();
  return reg;
}

// ---------------------------------------------------------------- traits

namespace {
const OpTraits kNoTraits;
}  // namespace

const OpTraits& opTraits(const std::string& op_type, const std::string& domain) {
  const OpSchema* s = OpRegistry::instance().find(op_type, domain);
  return s ? s->traits : kNoTraits;
}

const OpTraits& opTraits(const Node& node) {
  const OpSchema* s = OpRegistry::instance().find(node);
  return s ? s->traits : kNoTraits;
}

std::vector<std::string> opTypesWith(OpTrait traits) {
  std::vector<std::string> out;
  for (const OpSchema* s : OpRegistry::instance().schemas())
    if (s->traits.has(traits)) out.push_back(s->op_type);
  return out;
}

const OpTraits& opTraitsOfType(const std::string& op_type) {
  const OpRegistry& reg = OpRegistry::instance();
  const OpSchema* s = reg.find(op_type);
  if (!s) s = reg.find(op_type, kNpucDomain);
  return s ? s->traits : kNoTraits;
}

// ---------------------------------------------------------------- shape helpers

Shape broadcastShapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw ShapeError("shapes " + shapeStr(a) + " and " + shapeStr(b) + " cannot be broadcast");
    }
  }
  return out;
}

int64_t normalizeAxis(int64_t axis, int64_t rank, const char* what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) {
    throw ShapeError(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  return a;
}

void inferSameAsInput0(InferContext& ctx) {
  ctx.setOutput(0, ctx.inputDType(0), ctx.inputShape(0));
}

}  // namespace npuc
