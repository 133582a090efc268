#include "frontend/darknet/graph_emit.h"

#include <cmath>
#include <vector>

#include "common/error.h"

namespace npuc::darknet {

namespace {

// darknet's normalize_cpu(): (x - mean) / (sqrt(variance) + .000001f).
constexpr double kDarknetBnEpsilon = 1e-6;

class Emitter {
 public:
  Emitter(const NetPlan& plan, WeightsFile& weights, Graph& g) : plan_(plan), weights_(weights), g_(g) {}

  void run() {
    const Dims& in = plan_.input;
    Value* x = g_.addInput("data", DType::Float32, {1, in.c, in.h, in.w});
    for (const LayerPlan& p : plan_.layers) {
      prefix_ = "layer" + std::to_string(p.index) + "_";
      Value* prev = outs_.empty() ? x : outs_.back();
      Value* y = emitLayer(p, prev);
      // A layer that only aliases its input (route of one layer, dropout, yolo) keeps that name.
      if (y != prev && !y->isGraphInput() && (p.kind != LayerKind::Route || p.sources.size() > 1 || p.groups > 1)) {
        y->setName(g_.uniqueName(prefix_ + p.type));
      }
      outs_.push_back(y);
    }
    // darknet's network output is the last layer that is not a [cost] layer.
    for (size_t i = plan_.layers.size(); i-- > 0;) {
      if (plan_.layers[i].type == "cost") continue;
      if (plan_.layers[i].kind != LayerKind::Output) addOutput(outs_[i], plan_.layers[i]);
      break;
    }
  }

 private:
  Value* emitLayer(const LayerPlan& p, Value* prev) {
    switch (p.kind) {
      case LayerKind::Conv: return activation(p, conv(p, prev));
      case LayerKind::Connected: return activation(p, connected(p, prev));
      case LayerKind::MaxPool: return maxPool(p, prev);
      case LayerKind::AvgPool: return op("GlobalAveragePool", {prev}, "avgpool");
      case LayerKind::Route: return route(p);
      case LayerKind::Shortcut: return activation(p, shortcut(p, prev));
      case LayerKind::Upsample: return upsample(p, prev);
      case LayerKind::Reorg: return reorg(p, prev);
      case LayerKind::Softmax: return softmax(p, prev);
      case LayerKind::Output: addOutput(prev, p); return prev;
      case LayerKind::Identity: return prev;
    }
    throw GraphError(p.where + ": unhandled layer kind");
  }

  // ---- helpers

  Value* op(const std::string& type, const std::vector<Value*>& inputs, const std::string& what) {
    return g_.appendNode(type, inputs, 1, g_.uniqueName(prefix_ + what))->output();
  }
  Node* opNode(const std::string& type, const std::vector<Value*>& inputs, const std::string& what) {
    return g_.appendNode(type, inputs, 1, g_.uniqueName(prefix_ + what));
  }
  Value* scalar(float v, const std::string& what) { return g_.addConstant(Tensor::scalar(v), prefix_ + what); }
  Value* int64s(const std::vector<int64_t>& v, const std::string& what) {
    return g_.addConstant(Tensor::fromVector(v, {static_cast<int64_t>(v.size())}), prefix_ + what);
  }
  std::vector<float> read(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    weights_.read(v.data(), v.size());
    return v;
  }

  void addOutput(Value* v, const LayerPlan& p) {
    if (v->isGraphOutput() || v->isGraphInput()) return;
    if (p.kind == LayerKind::Output) v->setName(g_.uniqueName(prefix_ + p.type));
    g_.addOutput(v);
  }

  // Folds darknet's inference batch norm into per-output-channel scale (applied to the weights)
  // and the bias: y = s * (w.x - mean) + beta with s = gamma / (sqrt(var) + 1e-6).
  void foldBatchNorm(std::vector<float>& w, std::vector<float>& bias, const std::vector<float>& gamma,
                     const std::vector<float>& mean, const std::vector<float>& var) {
    const size_t n = bias.size();
    const size_t per = w.size() / n;
    for (size_t o = 0; o < n; ++o) {
      const double s = static_cast<double>(gamma[o]) / (std::sqrt(static_cast<double>(var[o])) + kDarknetBnEpsilon);
      for (size_t k = 0; k < per; ++k) w[o * per + k] = static_cast<float>(w[o * per + k] * s);
      bias[o] = static_cast<float>(static_cast<double>(bias[o]) - static_cast<double>(mean[o]) * s);
    }
  }

  Value* weightConst(std::vector<float> v, Shape shape, const std::string& what) {
    Tensor t(DType::Float32, std::move(shape));
    std::copy(v.begin(), v.end(), t.data<float>());
    return g_.addConstant(std::move(t), prefix_ + what);
  }

  // ---- layers

  Value* conv(const LayerPlan& p, Value* x) {
    // load_convolutional_weights(): biases, [scales, rolling_mean, rolling_variance], weights.
    std::vector<float> bias = read(p.filters);
    std::vector<float> gamma, mean, var;
    if (p.batch_normalize) {
      gamma = read(p.filters);
      mean = read(p.filters);
      var = read(p.filters);
    }
    const int64_t cin = p.in.c / p.groups;
    std::vector<float> w = read(p.filters * cin * p.size * p.size);  // OIHW, as darknet stores it
    if (p.batch_normalize) foldBatchNorm(w, bias, gamma, mean, var);
    Node* n = opNode("Conv", {x, weightConst(std::move(w), {p.filters, cin, p.size, p.size}, "weight"),
                              weightConst(std::move(bias), {p.filters}, "bias")},
                     p.type);
    n->attrs().set("kernel_shape", std::vector<int64_t>{p.size, p.size});
    n->attrs().set("strides", std::vector<int64_t>{p.stride, p.stride});
    n->attrs().set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
    n->attrs().set("dilations", std::vector<int64_t>{1, 1});
    n->attrs().set("group", p.groups);
    return n->output();
  }

  Value* connected(const LayerPlan& p, Value* x) {
    // load_connected_weights(): biases, weights, [scales, rolling_mean, rolling_variance].
    const int64_t inputs = p.in.numel();
    std::vector<float> bias = read(p.filters);
    std::vector<float> w = read(p.filters * inputs);
    if (weights_.transposedConnected()) {  // stored [inputs][outputs]
      std::vector<float> t(w.size());
      for (int64_t i = 0; i < inputs; ++i)
        for (int64_t o = 0; o < p.filters; ++o) t[static_cast<size_t>(o * inputs + i)] = w[static_cast<size_t>(i * p.filters + o)];
      w.swap(t);
    }
    if (p.batch_normalize) {
      std::vector<float> gamma = read(p.filters), mean = read(p.filters), var = read(p.filters);
      foldBatchNorm(w, bias, gamma, mean, var);
    }
    Node* flat = opNode("Flatten", {x}, "flatten");
    flat->attrs().set("axis", int64_t{1});
    Node* gemm = opNode("Gemm", {flat->output(), weightConst(std::move(w), {p.filters, inputs}, "weight"),
                                 weightConst(std::move(bias), {p.filters}, "bias")},
                        p.type);
    gemm->attrs().set("transB", int64_t{1});
    // Back to NCHW [1, N, 1, 1] (darknet's 1x1xN), so every layer's output stays 4-D.
    return op("Reshape", {gemm->output(), int64s({1, p.filters, 1, 1}, "shape")}, "reshape");
  }

  Value* maxPool(const LayerPlan& p, Value* x) {
    // darknet starts windows at -padding/2 and skips positions outside the input: an explicit,
    // possibly asymmetric pad with the ONNX MaxPool semantics (padding never wins a max).
    const int64_t begin = p.pad_total / 2, end = p.pad_total - begin;
    Node* n = opNode("MaxPool", {x}, p.type);
    n->attrs().set("kernel_shape", std::vector<int64_t>{p.size, p.size});
    n->attrs().set("strides", std::vector<int64_t>{p.stride, p.stride});
    n->attrs().set("pads", std::vector<int64_t>{begin, begin, end, end});
    return n->output();
  }

  Value* channelSlice(Value* x, int64_t start, int64_t end, const std::string& what) {
    return op("Slice", {x, int64s({start}, what + "_starts"), int64s({end}, what + "_ends"), int64s({1}, what + "_axes")},
              what);
  }

  Value* route(const LayerPlan& p) {
    std::vector<Value*> parts;
    for (int src : p.sources) {
      Value* v = outs_[static_cast<size_t>(src)];
      if (p.groups > 1) {
        const int64_t c = plan_.layers[static_cast<size_t>(src)].out.c / p.groups;
        v = channelSlice(v, c * p.group_id, c * (p.group_id + 1), "group");
      }
      parts.push_back(v);
    }
    if (parts.size() == 1) return parts[0];
    Node* n = opNode("Concat", parts, p.type);
    n->attrs().set("axis", int64_t{1});
    return n->output();
  }

  Value* shortcut(const LayerPlan& p, Value* prev) {
    Value* from = outs_[static_cast<size_t>(p.sources[0])];
    const Dims& f = plan_.layers[static_cast<size_t>(p.sources[0])].out;
    const Dims& o = p.out;
    if (f.c != o.c || f.h != o.h || f.w != o.w) {
      // shortcut_cpu(): from[k, j*stride, i*stride] is added to out[k, j, i] for k < min(c),
      // stride = w_from / w_out; channels beyond the `from` layer's are left as they are.
      const int64_t stride = f.w / o.w, minc = std::min(f.c, o.c);
      from = op("Slice", {from, int64s({0, 0, 0}, "from_starts"),
                          int64s({minc, (o.h - 1) * stride + 1, (o.w - 1) * stride + 1}, "from_ends"),
                          int64s({1, 2, 3}, "from_axes"), int64s({1, stride, stride}, "from_steps")},
                "from_slice");
      if (minc < o.c) {
        from = op("Pad", {from, int64s({0, 0, 0, 0, 0, o.c - minc, 0, 0}, "from_pads")}, "from_pad");
      }
    }
    if (p.alpha != 1.0f) prev = op("Mul", {prev, scalar(p.alpha, "alpha")}, "alpha");
    if (p.beta != 1.0f) from = op("Mul", {from, scalar(p.beta, "beta")}, "beta");
    return op("Add", {prev, from}, p.type);
  }

  Value* upsample(const LayerPlan& p, Value* x) {
    const float s = static_cast<float>(p.stride);
    Value* scales = g_.addConstant(Tensor::fromVector(std::vector<float>{1.0f, 1.0f, s, s}, {4}), prefix_ + "scales");
    // upsample_cpu(): out[j, i] = in[j / stride, i / stride]: nearest, asymmetric, floor.
    Node* n = opNode("Resize", {x, nullptr, scales}, p.type);
    n->attrs().set("mode", std::string("nearest"));
    n->attrs().set("coordinate_transformation_mode", std::string("asymmetric"));
    n->attrs().set("nearest_mode", std::string("floor"));
    Value* y = n->output();
    if (p.scale != 1.0f) y = op("Mul", {y, scalar(p.scale, "scale")}, "scale");
    return y;
  }

  // darknet's forward_reorg_layer() calls reorg_cpu(..., forward=0) with the input's own C,H,W:
  // it reads the input as if it were [C/s^2, H*s, W*s] and undoes a space-to-depth of that, which
  // is not the space-to-depth of the input (yolov2 was trained with it, so the model needs it):
  //   out[(dy*s + dx)*C/s^2 + c2, j, i] = in_flat[c2, j*s + dy, i*s + dx]   (in [C/s^2, H*s, W*s])
  // i.e. reshape [C/s^2, H, s, W, s], transpose to [s, s, C/s^2, H, W], reshape to the output.
  Value* reorg(const LayerPlan& p, Value* x) {
    const int64_t s = p.stride, c2 = p.in.c / (s * s);
    Value* r = op("Reshape", {x, int64s({c2, p.in.h, s, p.in.w, s}, "shape_in")}, "reshape_in");
    Node* t = opNode("Transpose", {r}, "transpose");
    t->attrs().set("perm", std::vector<int64_t>{2, 4, 0, 1, 3});
    return op("Reshape", {t->output(), int64s({1, p.out.c, p.out.h, p.out.w}, "shape")}, p.type);
  }

  Value* softmax(const LayerPlan& p, Value* x) {
    if (p.temperature != 1.0f) x = op("Mul", {x, scalar(1.0f / p.temperature, "temperature")}, "temperature");
    const Dims& d = p.in;
    if (p.spatial || (p.groups == 1 && d.h == 1 && d.w == 1)) {
      Node* n = opNode("Softmax", {x}, p.type);
      n->attrs().set("axis", int64_t{1});
      return n->output();
    }
    // softmax_cpu(): `groups` contiguous slices of the flattened C*H*W, each normalized alone.
    Value* r = op("Reshape", {x, int64s({1, p.groups, d.numel() / p.groups}, "group_shape")}, "group_reshape");
    Node* n = opNode("Softmax", {r}, p.type);
    n->attrs().set("axis", int64_t{2});
    return op("Reshape", {n->output(), int64s({1, d.c, d.h, d.w}, "shape")}, "reshape");
  }

  Value* activation(const LayerPlan& p, Value* x) {
    const std::string& a = p.activation;
    if (a == "linear") return x;
    if (a == "leaky" || a == "relie") {
      Node* n = opNode("LeakyRelu", {x}, a);
      n->attrs().set("alpha", a == "leaky" ? 0.1f : 0.01f);
      return n->output();
    }
    if (a == "relu") return op("Relu", {x}, a);
    if (a == "relu6") return op("Clip", {x, scalar(0.0f, "min"), scalar(6.0f, "max")}, a);
    if (a == "hardtan") return op("Clip", {x, scalar(-1.0f, "min"), scalar(1.0f, "max")}, a);
    if (a == "logistic") return op("Sigmoid", {x}, a);
    if (a == "tanh") return op("Tanh", {x}, a);
    if (a == "elu") {
      Node* n = opNode("Elu", {x}, a);
      n->attrs().set("alpha", 1.0f);
      return n->output();
    }
    if (a == "swish") return op("Mul", {x, op("Sigmoid", {x}, "swish_sigmoid")}, a);
    if (a == "mish") return op("Mul", {x, op("Tanh", {op("Softplus", {x}, "mish_softplus")}, "mish_tanh")}, a);
    throw UnsupportedOpError(p.where + ": activation '" + a + "' is not supported");
  }

  const NetPlan& plan_;
  WeightsFile& weights_;
  Graph& g_;
  std::vector<Value*> outs_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Graph> emitGraph(const NetPlan& plan, WeightsFile& weights, const std::string& name) {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->metadata["producer"] = "darknet (npuc darknet frontend)";
  Emitter(plan, weights, *g).run();
  return g;
}

}  // namespace npuc::darknet
