// Activations, Eltwise, Concat, Softmax, the shape layers (Flatten, Reshape, Permute) and the
// pass-through ones (Dropout, Split), plus the table from Caffe layer type to converter.
#include <algorithm>
#include <map>

#include "frontend/caffe/caffe_layers.h"

namespace npuc::caffe {

int64_t caffeAxis(NetBuilder& b, const Layer& l, int64_t axis, int64_t rank, const char* what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    b.fail(l, std::string(what) + " " + std::to_string(axis) + " is out of range for an input of rank " +
                  std::to_string(rank));
  }
  return a;
}

Value* int64Const(NetBuilder& b, const Layer& l, const std::vector<int64_t>& v, const std::string& what) {
  return b.constant(l, Tensor::fromVector(v, {static_cast<int64_t>(v.size())}), what);
}

namespace {

Value* floatScalar(NetBuilder& b, const Layer& l, float v, const std::string& what) {
  return b.constant(l, Tensor::scalar<float>(v), what);
}

void unary(NetBuilder& b, const Layer& l, const std::string& op, Attributes a = {}) {
  b.expectArity(l, 1, 1, 1);
  b.setTop(l, 0, b.emit(l, op, {b.bottom(l, 0)}, std::move(a))->output());
}

void convertReLU(NetBuilder& b, const Layer& l) {
  const float slope = l.relu_param().negative_slope();
  if (slope == 0.f) return unary(b, l, "Relu");
  Attributes a;
  a.set("alpha", slope);
  unary(b, l, "LeakyRelu", std::move(a));
}

void convertReLU6(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  b.setTop(l, 0, b.emit(l, "Clip", {x, floatScalar(b, l, 0.f, "min"), floatScalar(b, l, 6.f, "max")})->output());
}

void convertSigmoid(NetBuilder& b, const Layer& l) { unary(b, l, "Sigmoid"); }
void convertTanH(NetBuilder& b, const Layer& l) { unary(b, l, "Tanh"); }

void convertEltwise(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 2, -1, 1);
  const auto& p = l.eltwise_param();
  const int n = l.bottom_size();
  if (p.coeff_size() != 0 && p.coeff_size() != n) {
    b.fail(l, "has " + std::to_string(p.coeff_size()) + " coeff values for " + std::to_string(n) + " bottoms");
  }
  if (p.coeff_size() != 0 && p.operation() != npuc_caffe::EltwiseParameter::SUM) {
    b.fail(l, "coeff is only allowed with operation SUM");
  }
  const char* op = p.operation() == npuc_caffe::EltwiseParameter::PROD  ? "Mul"
                   : p.operation() == npuc_caffe::EltwiseParameter::MAX ? "Max"
                                                                         : "Add";
  auto term = [&](int i) {
    Value* v = b.bottom(l, i);
    const float c = p.coeff_size() ? p.coeff(i) : 1.f;
    if (c == 1.f || c == -1.f) return v;  // -1 becomes a Sub below
    return b.emit(l, "Mul", {v, floatScalar(b, l, c, "coeff" + std::to_string(i))}, {}, "coeff" + std::to_string(i))
        ->output();
  };
  auto coeff = [&](int i) { return p.coeff_size() ? p.coeff(i) : 1.f; };
  Value* acc = term(0);
  if (coeff(0) == -1.f) acc = b.emit(l, "Neg", {acc}, {}, "neg")->output();
  for (int i = 1; i < n; ++i) {
    const bool sub = coeff(i) == -1.f;
    const bool last = i == n - 1;
    acc = b.emit(l, sub ? "Sub" : op, {acc, term(i)}, {}, last ? "" : "step" + std::to_string(i))->output();
  }
  b.setTop(l, 0, acc);
}

void convertConcat(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, -1, 1);
  const auto& p = l.concat_param();
  Value* x0 = b.bottom(l, 0);
  const int64_t raw = p.has_axis() ? p.axis() : p.concat_dim();  // concat_dim: the legacy spelling
  Attributes a;
  a.set("axis", caffeAxis(b, l, raw, x0->rank(), "concat axis"));
  std::vector<Value*> in;
  for (int i = 0; i < l.bottom_size(); ++i) in.push_back(b.bottom(l, i));
  if (in.size() == 1) return b.setTop(l, 0, in[0]);
  b.setTop(l, 0, b.emit(l, "Concat", in, std::move(a))->output());
}

void convertSoftmax(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  Attributes a;
  // Caffe normalizes over one axis, like ONNX Softmax from opset 13 (npuc's canonical form).
  a.set("axis", caffeAxis(b, l, l.softmax_param().axis(), x->rank(), "softmax_param.axis"));
  b.setTop(l, 0, b.emit(l, "Softmax", {x}, std::move(a))->output());
}

// Reshape with ONNX's 0 (copy the input dim at the same index) for leading dims, so the graph
// keeps working when input_size_list changes the batch.
void reshapeTo(NetBuilder& b, const Layer& l, Value* x, std::vector<int64_t> shape) {
  b.setTop(l, 0, b.emit(l, "Reshape", {x, int64Const(b, l, shape, "shape")})->output());
}

void convertFlatten(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  const int64_t rank = x->rank();
  const auto& p = l.flatten_param();
  const int64_t start = caffeAxis(b, l, p.axis(), rank, "flatten_param.axis");
  const int64_t end = caffeAxis(b, l, p.end_axis(), rank, "flatten_param.end_axis");
  if (end < start) b.fail(l, "flatten_param.end_axis comes before axis");
  std::vector<int64_t> shape(static_cast<size_t>(start), 0);
  shape.push_back(-1);
  for (int64_t i = end + 1; i < rank; ++i) shape.push_back(x->shape()[i]);
  reshapeTo(b, l, x, shape);
}

void convertReshape(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  const int64_t rank = x->rank();
  const auto& p = l.reshape_param();
  // Caffe replaces input dims [start, end) by `shape`; axis and num_axes may count from the end
  // (axis -1 means "after the last dim", num_axes -1 "to the end").
  const int64_t start = p.axis() < 0 ? p.axis() + rank + 1 : p.axis();
  if (start < 0 || start > rank) b.fail(l, "reshape_param.axis " + std::to_string(p.axis()) + " is out of range");
  const int64_t end = p.num_axes() == -1 ? rank : start + p.num_axes();
  if (p.num_axes() < -1 || end > rank) b.fail(l, "reshape_param.num_axes " + std::to_string(p.num_axes()) + " is out of range");
  std::vector<int64_t> shape(static_cast<size_t>(start), 0);
  int inferred = 0;
  for (int64_t d : p.shape().dim()) {
    if (d < -1) b.fail(l, "reshape_param.shape has dim " + std::to_string(d));
    inferred += d == -1;
    shape.push_back(d);  // Caffe's 0 and -1 mean what ONNX's do: copy the dim at this index, infer
  }
  if (inferred > 1) b.fail(l, "reshape_param.shape has more than one -1");
  for (int64_t i = end; i < rank; ++i) shape.push_back(x->shape()[i]);
  reshapeTo(b, l, x, shape);
}

void convertPermute(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  const int64_t rank = x->rank();
  std::vector<int64_t> perm;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (uint32_t o : l.permute_param().order()) {
    if (o >= rank || seen[o]) b.fail(l, "permute_param.order repeats or exceeds the input rank " + std::to_string(rank));
    seen[o] = true;
    perm.push_back(o);
  }
  // SSD Caffe appends the axes the order leaves out, in increasing order.
  for (int64_t i = 0; i < rank; ++i)
    if (!seen[static_cast<size_t>(i)]) perm.push_back(i);
  Attributes a;
  a.set("perm", perm);
  b.setTop(l, 0, b.emit(l, "Transpose", {x}, std::move(a))->output());
}

// Inference-time identities: the tops are bound to the bottom's value, no node.
void convertDropout(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  b.setTop(l, 0, b.bottom(l, 0));
}

void convertSplit(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, -1);
  Value* x = b.bottom(l, 0);
  for (int i = 0; i < l.top_size(); ++i) b.setTop(l, i, x);
}

const std::map<std::string, LayerConverter>& table() {
  static const std::map<std::string, LayerConverter> t{
      {"BatchNorm", convertBatchNorm},   {"Concat", convertConcat},
      {"Convolution", convertConvolution}, {"Deconvolution", convertDeconvolution},
      {"Dropout", convertDropout},       {"Eltwise", convertEltwise},
      {"Flatten", convertFlatten},       {"InnerProduct", convertInnerProduct},
      {"Permute", convertPermute},       {"Pooling", convertPooling},
      {"PReLU", convertPReLU},           {"ReLU", convertReLU},
      {"ReLU6", convertReLU6},           {"Reshape", convertReshape},
      {"Scale", convertScale},           {"Sigmoid", convertSigmoid},
      {"Softmax", convertSoftmax},       {"Split", convertSplit},
      {"TanH", convertTanH},
  };
  return t;
}

}  // namespace

LayerConverter findLayerConverter(const std::string& type) {
  auto it = table().find(type);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> supportedLayerTypes() {
  std::vector<std::string> out;
  for (const auto& [k, v] : table()) out.push_back(k);
  return out;
}

}  // namespace npuc::caffe
