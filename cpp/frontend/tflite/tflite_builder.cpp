#include "frontend/tflite/tflite_builder.h"

#include <cstring>

#include "common/error.h"

namespace npuc::tflite {

int64_t nhwcAxisToNchw(int64_t axis) {
  static const int64_t map[4] = {0, 2, 3, 1};
  return map[axis];
}

Tensor permuteConstant(const Tensor& t, const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  Shape out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = t.shape()[static_cast<size_t>(perm[i])];
  Tensor out(t.dtype(), out_shape);
  const std::vector<int64_t> in_strides = shapeStrides(t.shape());
  const size_t eb = dtypeSize(t.dtype());
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += idx[d] * in_strides[static_cast<size_t>(perm[d])];
    std::memcpy(dst + o * static_cast<int64_t>(eb), src + off * static_cast<int64_t>(eb), eb);
    for (size_t d = r; d-- > 0;) {  // odometer over the output index
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Builder::Builder(const TfliteFile& f, Graph& g, bool input_is_nchw)
    : f_(f), g_(g), input_is_nchw_(input_is_nchw),
      slots_(static_cast<size_t>(f.numTensors())), const_cache_(static_cast<size_t>(f.numTensors())),
      const_read_(static_cast<size_t>(f.numTensors()), false) {}

std::string Builder::where() const {
  return f_.name() + ": subgraph 0 operator " + std::to_string(op_index_) + " (" + op_name_ + ")";
}

void Builder::fail(const std::string& msg) const { throw ModelLoadError(where() + ": " + msg); }
void Builder::unsupported(const std::string& msg) const { throw UnsupportedOpError(where() + ": " + msg); }

void Builder::beginOp(int index, const fb::Operator& op) {
  op_ = &op;
  op_index_ = index;
  op_name_ = f_.opName(op, index);
  prefix_.clear();
  if (op.outputs() && op.outputs()->size() > 0) {
    const int o = op.outputs()->Get(0);
    if (o >= 0 && o < f_.numTensors() && f_.tensor(o, "").name()) prefix_ = f_.tensor(o, "").name()->str();
  }
  if (prefix_.empty()) prefix_ = "op" + std::to_string(index);
}

int Builder::numInputs() const { return op_->inputs() ? static_cast<int>(op_->inputs()->size()) : 0; }
int Builder::numOutputs() const { return op_->outputs() ? static_cast<int>(op_->outputs()->size()) : 0; }
int Builder::inputIndex(int i) const {
  if (i >= numInputs()) fail("has " + std::to_string(numInputs()) + " inputs, input " + std::to_string(i) + " is needed");
  return op_->inputs()->Get(static_cast<uint32_t>(i));
}
int Builder::outputIndex(int i) const {
  if (i >= numOutputs()) fail("has " + std::to_string(numOutputs()) + " outputs, output " + std::to_string(i) + " is needed");
  return op_->outputs()->Get(static_cast<uint32_t>(i));
}

void Builder::expectArity(int min_in, int max_in, int outs) const {
  const int n = numInputs();
  if (n < min_in || (max_in >= 0 && n > max_in)) {
    fail("has " + std::to_string(n) + " inputs, expected " + std::to_string(min_in) +
         (max_in == min_in ? "" : max_in < 0 ? " or more" : " to " + std::to_string(max_in)));
  }
  if (numOutputs() != outs) fail("has " + std::to_string(numOutputs()) + " outputs, expected " + std::to_string(outs));
  for (int i = 0; i < n; ++i) {
    const int t = op_->inputs()->Get(static_cast<uint32_t>(i));
    if (t < -1 || t >= f_.numTensors()) f_.tensor(t, "subgraph 0 operator " + std::to_string(op_index_) + " (" + op_name_ + ") input " + std::to_string(i));
  }
  for (int i = 0; i < outs; ++i) f_.tensor(outputIndex(i), "subgraph 0 operator " + std::to_string(op_index_) + " (" + op_name_ + ") output " + std::to_string(i));
}

Shape Builder::inputShape(int i) const { return tensorShape(f_, inputIndex(i)); }
Shape Builder::outputShape(int i) const { return tensorShape(f_, outputIndex(i)); }

const Tensor* Builder::constInputOrNull(int i) {
  const int t = inputIndex(i);
  if (t < 0) return nullptr;
  f_.tensor(t, where() + " input " + std::to_string(i));
  if (!const_read_[static_cast<size_t>(t)]) {
    const_cache_[static_cast<size_t>(t)] = readConstant(f_, t);
    const_read_[static_cast<size_t>(t)] = true;
  }
  // A constant produced by a folded DEQUANTIZE lives in its slot, not in a buffer.
  if (!const_cache_[static_cast<size_t>(t)] && slots_[static_cast<size_t>(t)].value &&
      slots_[static_cast<size_t>(t)].value->isConstant() && !slots_[static_cast<size_t>(t)].nchw) {
    return &slots_[static_cast<size_t>(t)].value->constant();
  }
  return const_cache_[static_cast<size_t>(t)] ? &*const_cache_[static_cast<size_t>(t)] : nullptr;
}

const Tensor& Builder::constInput(int i, const std::string& what) {
  const Tensor* t = constInputOrNull(i);
  if (!t) fail(what + " (input " + std::to_string(i) + ", " + f_.tensorWhat(inputIndex(i)) + ") must be a constant");
  return *t;
}

Builder::Slot& Builder::slot(int t, const std::string& role) {
  f_.tensor(t, role);
  Slot& s = slots_[static_cast<size_t>(t)];
  if (s.value) return s;
  size_t size = 0;
  if (f_.tensorData(t, &size)) {
    if (!const_read_[static_cast<size_t>(t)]) {
      const_cache_[static_cast<size_t>(t)] = readConstant(f_, t);
      const_read_[static_cast<size_t>(t)] = true;
    }
    const fb::Tensor& ft = f_.tensor(t, role);
    s.value = g_.addConstant(*const_cache_[static_cast<size_t>(t)], ft.name() ? ft.name()->str() : "");
    s.nchw = false;
    return s;
  }
  fail(role + " " + f_.tensorWhat(t) + " is read before any operator writes it (and it is neither a subgraph "
       "input nor a constant)");
}

Value* Builder::input(int i) {
  const int t = inputIndex(i);
  if (t < 0) fail("input " + std::to_string(i) + " is omitted but required");
  return slot(t, "input " + std::to_string(i)).value;
}

bool Builder::inputIsNchw(int i) { return input(i) && slots_[static_cast<size_t>(inputIndex(i))].nchw; }

Value* Builder::inputNchw(int i) {
  Value* v = input(i);
  if (inputIsNchw(i)) return v;
  const Shape s = inputShape(i);
  if (s.size() != 4) fail("input " + std::to_string(i) + " (" + f_.tensorWhat(inputIndex(i)) + ") has shape " + shapeStr(s) + ", a 4-D NHWC tensor is needed");
  if (v->isConstant()) return constant(permuteConstant(v->constant(), kToNchw), "nchw");
  return toNchw(v, s, "to_nchw");
}

Value* Builder::inputFile(int i) {
  Value* v = input(i);
  if (!inputIsNchw(i)) return v;
  return toNhwc(v, inputShape(i), "to_nhwc");
}

Value* Builder::inputBroadcastNchw(int i) {
  Value* v = input(i);
  if (inputIsNchw(i)) return v;
  Shape s = inputShape(i);
  if (s.size() > 4) fail("input " + std::to_string(i) + " has rank " + std::to_string(s.size()) + " against a 4-D result");
  if (s.size() == 0) return v;  // a scalar broadcasts in any layout
  Shape s4 = s;
  s4.insert(s4.begin(), 4 - s.size(), 1);
  if (v->isConstant()) return constant(permuteConstant(v->constant().reshaped(s4), kToNchw), "nchw");
  Value* r = node("Reshape", {v, int64s(s4, "shape4d")}, "reshape4d")->output();
  copyRange(v, r);
  return toNchw(r, s4, "to_nchw");
}

void Builder::setOutput(int i, Value* v, bool nchw) {
  const int t = outputIndex(i);
  const fb::Tensor& ft = f_.tensor(t, where() + " output");
  Slot& s = slots_[static_cast<size_t>(t)];
  if (s.value) fail("output " + std::to_string(i) + " (" + f_.tensorWhat(t) + ") is written a second time");
  if (ft.name() && !v->isGraphInput() && v->name() != ft.name()->str()) v->setName(g_.uniqueName(ft.name()->str()));
  s.value = v;
  s.nchw = nchw;
  recordRange(v, t);
}

void Builder::aliasOutput(int i, Value* v, bool nchw) {
  const int t = outputIndex(i);
  Slot& s = slots_[static_cast<size_t>(t)];
  if (s.value) fail("output " + std::to_string(i) + " (" + f_.tensorWhat(t) + ") is written a second time");
  s.value = v;
  s.nchw = nchw;
  if (!ranges_.count(v)) recordRange(v, t);
}

Node* Builder::node(const std::string& op_type, const std::vector<Value*>& inputs, const std::string& suffix,
                    size_t num_outputs) {
  return g_.appendNode(op_type, inputs, num_outputs, g_.uniqueName(suffix.empty() ? prefix_ : prefix_ + "_" + suffix));
}

Value* Builder::constant(Tensor t, const std::string& suffix) { return g_.addConstant(std::move(t), prefix_ + "_" + suffix); }

Value* Builder::int64s(const std::vector<int64_t>& v, const std::string& suffix) {
  return constant(Tensor::fromVector(v, {static_cast<int64_t>(v.size())}), suffix);
}

Value* Builder::transpose(Value* x, const std::vector<int64_t>& perm, const std::string& suffix) {
  Node* n = node("Transpose", {x}, suffix);
  n->attrs().set("perm", perm);
  copyRange(x, n->output());
  return n->output();
}

namespace {

bool sameElementOrder(const Shape& nhwc) { return nhwc.size() == 4 && (nhwc[3] == 1 || (nhwc[1] == 1 && nhwc[2] == 1)); }

}  // namespace

Value* Builder::toNchw(Value* x, const Shape& nhwc, const std::string& suffix) {
  if (!sameElementOrder(nhwc)) return transpose(x, kToNchw, suffix);
  Value* y = node("Reshape", {x, int64s({nhwc[0], nhwc[3], nhwc[1], nhwc[2]}, suffix + "_shape")}, suffix)->output();
  copyRange(x, y);
  return y;
}

Value* Builder::toNhwc(Value* x, const Shape& nhwc, const std::string& suffix) {
  if (!sameElementOrder(nhwc)) return transpose(x, kToNhwc, suffix);
  Value* y = node("Reshape", {x, int64s(nhwc, suffix + "_shape")}, suffix)->output();
  copyRange(x, y);
  return y;
}

Value* Builder::fusedActivation(Value* x, int8_t act) {
  auto clip = [&](float lo, float hi) {
    return node("Clip", {x, constant(Tensor::scalar(lo), "clip_min"), constant(Tensor::scalar(hi), "clip_max")}, "act")->output();
  };
  switch (act) {
    case fb::ActivationFunctionType_NONE: return x;
    case fb::ActivationFunctionType_RELU: return node("Relu", {x}, "act")->output();
    case fb::ActivationFunctionType_RELU_N1_TO_1: return clip(-1.f, 1.f);
    case fb::ActivationFunctionType_RELU6: return clip(0.f, 6.f);
    case fb::ActivationFunctionType_TANH: return node("Tanh", {x}, "act")->output();
    default:
      unsupported("fused activation " + std::string(fb::EnumNameActivationFunctionType(static_cast<fb::ActivationFunctionType>(act))) +
                  " (" + std::to_string(act) + ") is not supported (npuc reads NONE, RELU, RELU_N1_TO_1, RELU6, TANH)");
  }
}

void Builder::recordRange(Value* v, int t) {
  if (auto r = activationRange(f_, t)) ranges_[v] = *r;
}

void Builder::copyRange(Value* from, Value* to) {
  auto it = ranges_.find(from);
  if (it != ranges_.end()) ranges_[to] = it->second;
}

void Builder::declareInputs() {
  const auto* ins = f_.subgraph().inputs();
  if (!ins) return;
  for (uint32_t k = 0; k < ins->size(); ++k) {
    const int t = ins->Get(k);
    const fb::Tensor& ft = f_.tensor(t, "subgraph 0 input " + std::to_string(k));
    const Shape s = tensorShape(f_, t);
    const std::string name = ft.name() && ft.name()->size() ? ft.name()->str() : "input_" + std::to_string(k);
    if (g_.findValue(name)) throw ModelLoadError(f_.name() + ": subgraph 0 input " + std::to_string(k) + " reuses the name '" + name + "'");
    Slot& sl = slots_[static_cast<size_t>(t)];
    if (sl.value) throw ModelLoadError(f_.name() + ": subgraph 0 input " + std::to_string(k) + " (" + f_.tensorWhat(t) + ") is listed twice");
    if (s.size() == 4 && !input_is_nchw_) {
      sl.value = g_.addInput(name, DType::Float32, {s[0], s[3], s[1], s[2]});
      sl.nchw = true;
    } else if (s.size() == 4) {
      // The file's dims are taken as NCHW already: the graph input keeps them, and the one
      // Transpose below gives the canonical form of the file's (nominally NHWC) tensor.
      Value* in = g_.addInput(name, DType::Float32, s);
      recordRange(in, t);
      prefix_ = name;
      sl.value = transpose(in, kToNchw, "canonical");
      sl.nchw = true;
    } else {
      sl.value = g_.addInput(name, DType::Float32, s);
    }
    recordRange(sl.value, t);
  }
}

void Builder::declareOutputs() {
  const auto* outs = f_.subgraph().outputs();
  if (!outs || outs->size() == 0) throw ModelLoadError(f_.name() + ": subgraph 0 declares no outputs");
  for (uint32_t k = 0; k < outs->size(); ++k) {
    const int t = outs->Get(k);
    const std::string role = "subgraph 0 output " + std::to_string(k);
    f_.tensor(t, role);
    Slot& sl = slots_[static_cast<size_t>(t)];
    if (!sl.value) {
      size_t size = 0;
      if (!f_.tensorData(t, &size)) throw ModelLoadError(f_.name() + ": " + role + " (" + f_.tensorWhat(t) + ") is written by no operator");
      slot(t, role);
    }
    Value* v = sl.value;
    // The output carries the file's tensor name even when an op that is nothing here (a final
    // DEQUANTIZE of an int8 result) made it an alias of another tensor's value.
    const fb::Tensor& ft = f_.tensor(t, role);
    const std::string want = ft.name() && ft.name()->size() ? ft.name()->str() : v->name();
    if (sl.nchw) {
      const std::string name = want;
      if (!v->isGraphInput() && v->name() == name) v->setName(g_.uniqueName(name + "_nchw"));
      prefix_ = name;
      Value* y = toNhwc(v, tensorShape(f_, t), "to_nhwc");
      y->setName(g_.findValue(name) ? g_.uniqueName(name) : name);
      v = y;
    } else if (v->name() != want && !v->isGraphInput() && !v->isConstant() && !v->isGraphOutput()) {
      v->setName(g_.uniqueName(want));
    }
    if (v->isGraphOutput()) {  // the same tensor listed twice: ONNX-style graphs need distinct values
      Node* n = g_.appendNode("Identity", {v}, 1, g_.uniqueName(v->name() + "_copy"));
      copyRange(v, n->output());
      v = n->output();
    }
    g_.addOutput(v);
  }
}

namespace {
// A per-Value record keyed by the values' names (names are what survives the graph's later passes).
template <typename T>
std::map<std::string, T> keyedByName(const Graph& g, const std::map<const Value*, T>& by_value) {
  std::map<std::string, T> out;
  for (const Value* v : g.values()) {
    auto it = by_value.find(v);
    if (it != by_value.end()) out[v->name()] = it->second;
  }
  return out;
}
}  // namespace

std::map<std::string, QuantRange> Builder::rangesByName() const {
  return keyedByName(g_, ranges_);
}

void Builder::recordWeightScales(Value* w, int i, const std::vector<int64_t>& perm) {
  const int t = inputIndex(i);
  auto ws = weightScales(f_, t);
  if (!ws) return;
  if (ws->axis >= 0) {
    for (size_t k = 0; k < perm.size(); ++k)
      if (perm[k] == ws->axis) {
        ws->axis = static_cast<int>(k);
        break;
      }
  }
  weight_scales_[w] = *ws;
}

std::map<std::string, WeightScales> Builder::weightScalesByName() const {
  return keyedByName(g_, weight_scales_);
}

}  // namespace npuc::tflite
