#include "frontend/caffe/caffe_builder.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "opset/eval.h"

namespace npuc::caffe {

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

NetBuilder::NetBuilder(Graph& graph, const npuc_caffe::NetParameter* weights, std::string prototxt_what,
                       std::string weights_what)
    : graph_(graph), weights_(weights), prototxt_what_(std::move(prototxt_what)),
      weights_what_(std::move(weights_what)) {
  if (!weights_) return;
  // Current-format layers first; a legacy V1 caffemodel names its layers the same way.
  for (const auto& l : weights_->layer()) weights_by_layer_.emplace(l.name(), &l.blobs());
  for (const auto& l : weights_->layers()) weights_by_layer_.emplace(l.name(), &l.blobs());
}

void NetBuilder::addInput(const std::string& name, const Shape& shape) {
  if (blobs_.count(name)) throw ModelLoadError(prototxt_what_ + ": input '" + name + "' is declared twice");
  // Bounded so no product of dims computed while converting can overflow (the import tail
  // applies the real size limits afterwards).
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  for (int64_t d : shape) {
    if (d <= 0 || d > kMaxDim) {
      throw ModelLoadError(prototxt_what_ + ": input '" + name + "' has shape " + shapeStr(shape) +
                           "; every dim must be in 1.." + std::to_string(kMaxDim));
    }
  }
  blobs_[name] = graph_.addInput(name, DType::Float32, shape);
}

[[noreturn]] void NetBuilder::fail(const Layer& layer, const std::string& msg) const {
  throw ModelLoadError(prototxt_what_ + ": layer '" + layer.name() + "' (" + layer.type() + "): " + msg);
}

void NetBuilder::expectArity(const Layer& layer, int min_bottoms, int max_bottoms, int tops) {
  const int nb = layer.bottom_size();
  if (nb < min_bottoms || (max_bottoms >= 0 && nb > max_bottoms)) {
    const std::string want = min_bottoms == max_bottoms ? std::to_string(min_bottoms)
                             : max_bottoms < 0          ? "at least " + std::to_string(min_bottoms)
                                                        : std::to_string(min_bottoms) + " to " + std::to_string(max_bottoms);
    fail(layer, "has " + std::to_string(nb) + " bottoms, expected " + want);
  }
  if (tops >= 0 && layer.top_size() != tops) {
    fail(layer, "has " + std::to_string(layer.top_size()) + " tops, expected " + std::to_string(tops));
  }
}

Value* NetBuilder::bottom(const Layer& layer, int i) {
  if (i >= layer.bottom_size()) fail(layer, "bottom " + std::to_string(i) + " is missing");
  auto it = blobs_.find(layer.bottom(i));
  if (it == blobs_.end()) {
    fail(layer, "bottom '" + layer.bottom(i) + "' is not produced by any earlier layer or input");
  }
  return it->second;
}

void NetBuilder::setTop(const Layer& layer, int i, Value* v) {
  const std::string& name = layer.top(i);
  auto it = blobs_.find(name);
  if (it == blobs_.end()) {
    produced_order_.push_back(name);
  } else if (it->second == v) {
    return;  // an alias of the same value (Split, Dropout in place)
  }
  // Graph inputs keep their names (the user feeds them by name); constants and node outputs
  // give theirs up to the newest holder of the blob.
  // An alias (Split, Dropout) leaves the value the name of the blob it already holds.
  const bool aliased = std::any_of(blobs_.begin(), blobs_.end(), [v](const auto& kv) { return kv.second == v; });
  if (!aliased && !v->isGraphInput() && !v->isConstant() && v->name() != name) {
    if (Value* holder = graph_.findValue(name); holder && !holder->isGraphInput()) {
      holder->setName(graph_.uniqueName(name + "_before_" + layer.name()));
    }
    if (!graph_.findValue(name)) v->setName(name);
  }
  blobs_[name] = v;
}

Node* NetBuilder::emit(const Layer& layer, const std::string& op, const std::vector<Value*>& inputs,
                       Attributes attrs, const std::string& suffix) {
  const std::string node_name = graph_.uniqueName(suffix.empty() ? layer.name() : layer.name() + "_" + suffix);
  Node* n = graph_.appendNode(op, inputs, 1, node_name);
  n->attrs() = std::move(attrs);
  try {
    inferNode(*n);
  } catch (const Error& e) {
    fail(layer, std::string("cannot compute its output shape (") + e.what() + ")");
  }
  return n;
}

Value* NetBuilder::constant(const Layer& layer, Tensor t, const std::string& what) {
  return graph_.addConstant(std::move(t), layer.name() + "_" + what);
}

const google::protobuf::RepeatedPtrField<npuc_caffe::BlobProto>* NetBuilder::blobsOf(const Layer& layer) const {
  // Blobs written into the prototxt itself are allowed too (rare, but valid Caffe).
  if (layer.blobs_size() > 0) return &layer.blobs();
  auto it = weights_by_layer_.find(layer.name());
  return it == weights_by_layer_.end() ? nullptr : it->second;
}

int NetBuilder::numBlobs(const Layer& layer) const {
  const auto* b = blobsOf(layer);
  return b ? b->size() : 0;
}

Tensor NetBuilder::blob(const Layer& layer, int i, const Shape& expected) {
  const auto* blobs = blobsOf(layer);
  if (!weights_ && !blobs) fail(layer, "needs trained weights but no caffemodel was given (blobs=...)");
  if (!blobs) fail(layer, "has no blobs in " + weights_what_ + " (no layer of that name there)");
  if (i >= blobs->size()) {
    fail(layer, "blob " + std::to_string(i) + " is missing in " + weights_what_ + " (the layer has " +
                    std::to_string(blobs->size()) + ")");
  }
  const npuc_caffe::BlobProto& b = blobs->Get(i);
  Shape got;
  const bool legacy = !b.has_shape();
  if (legacy) {
    got = {b.num(), b.channels(), b.height(), b.width()};
  } else {
    got.assign(b.shape().dim().begin(), b.shape().dim().end());
  }
  const int64_t want_numel = checkedNumel(layer, expected);
  const int64_t have = b.data_size() > 0 ? b.data_size() : b.double_data_size();
  const std::string where = "blob " + std::to_string(i) + " in " + weights_what_;
  if (legacy ? checkedNumel(layer, got) != want_numel : got != expected) {
    fail(layer, where + " has shape " + shapeStr(got) + ", expected " + shapeStr(expected));
  }
  if (have != want_numel) {
    fail(layer, where + " holds " + std::to_string(have) + " values, its shape " + shapeStr(expected) + " needs " +
                    std::to_string(want_numel));
  }
  Tensor t(DType::Float32, expected);
  float* dst = t.data<float>();
  for (int64_t k = 0; k < want_numel; ++k) {
    const double v = b.data_size() > 0 ? b.data(static_cast<int>(k)) : b.double_data(static_cast<int>(k));
    if (!std::isfinite(v)) fail(layer, where + " holds a non-finite value (NaN or Inf) at index " + std::to_string(k));
    dst[k] = static_cast<float>(v);
  }
  return t;
}

int64_t NetBuilder::checkedNumel(const Layer& layer, const Shape& shape) const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) fail(layer, "shape " + shapeStr(shape) + " is negative or too large");
  }
  return n;
}

void NetBuilder::finishOutputs() {
  for (const std::string& name : produced_order_) {
    Value* v = blobs_.at(name);
    if (v->hasUses() || v->isGraphOutput() || v->isGraphInput() || v->isConstant()) continue;
    graph_.addOutput(v);
  }
}

}  // namespace npuc::caffe
