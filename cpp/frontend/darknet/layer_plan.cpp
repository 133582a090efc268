#include "frontend/darknet/layer_plan.h"

#include <map>
#include <set>

#include "common/error.h"

namespace npuc::darknet {

namespace {

// Beyond these a .cfg is malformed or hostile; real networks are far below (yolov3 at 608x608
// has 1024 filters of size 3). The caps keep the size arithmetic below in int64 range.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxNumel = int64_t{1} << 31;
constexpr int64_t kMaxKernel = 1024;
constexpr int64_t kMaxParams = int64_t{1} << 40;

// Section names darknet's string_to_layer_type() accepts, mapped to what npuc builds.
const std::map<std::string, LayerKind>& supportedTypes() {
  static const std::map<std::string, LayerKind> m = {
      {"convolutional", LayerKind::Conv}, {"conv", LayerKind::Conv},
      {"connected", LayerKind::Connected}, {"conn", LayerKind::Connected},
      {"maxpool", LayerKind::MaxPool}, {"max", LayerKind::MaxPool},
      {"avgpool", LayerKind::AvgPool}, {"avg", LayerKind::AvgPool},
      {"route", LayerKind::Route}, {"shortcut", LayerKind::Shortcut},
      {"upsample", LayerKind::Upsample}, {"reorg", LayerKind::Reorg},
      {"yolo", LayerKind::Output}, {"region", LayerKind::Output}, {"detection", LayerKind::Output},
      {"softmax", LayerKind::Softmax}, {"soft", LayerKind::Softmax},
      {"dropout", LayerKind::Identity}, {"cost", LayerKind::Identity},
  };
  return m;
}

// Layers darknet (pjreddie's or AlexeyAB's) has and npuc does not build yet.
const std::set<std::string>& knownUnsupportedTypes() {
  static const std::set<std::string> s = {
      "local", "crop", "reorg3d", "rnn", "gru", "lstm", "crnn", "conv_lstm", "deconvolutional", "deconv",
      "batchnorm", "normalization", "lrn", "l2norm", "logistic", "activation", "iseg", "scale_channels", "sam",
      "gaussian_yolo", "empty", "silence", "implicit_add", "implicit_mul", "contrastive", "xnor"};
  return s;
}

// Activations npuc builds (graph_emit.cpp) and those darknet has that it does not.
const std::set<std::string>& supportedActivations() {
  static const std::set<std::string> s = {"linear", "leaky", "relu", "relie", "relu6", "logistic",
                                          "tanh",   "elu",   "hardtan", "mish", "swish"};
  return s;
}
const std::set<std::string>& knownUnsupportedActivations() {
  static const std::set<std::string> s = {"ramp", "plse", "loggy", "stair", "lhtan", "selu", "gelu",
                                          "hard_mish", "normalize_channels", "normalize_channels_softmax",
                                          "normalize_channels_softmax_maxval", "revleaky"};
  return s;
}

// Keys that only steer training (or, in output layers, decoding): accepted and ignored.
const std::set<std::string> kTrainingKeys = {"stopbackward", "dontsave", "train_only_bn", "learning_rate",
                                             "onlyforward", "burnin_update", "probability", "type", "noloss"};

class Planner {
 public:
  explicit Planner(std::vector<CfgSection>& sections) : sections_(sections) {}

  NetPlan run() {
    CfgSection& net = sections_.front();
    if (net.type() != "net" && net.type() != "network") {
      throw ModelLoadError(net.where() + ": the first section must be [net] (the input size), found [" +
                           net.type() + "]");
    }
    plan_.input = Dims{net.getInt("channels", 0), net.getInt("height", 0), net.getInt("width", 0)};
    checkDims(net, plan_.input, "the input (channels, height, width)");
    // [net] holds dozens of training settings (batch, momentum, augmentation, policy ...): none
    // changes inference, so its other keys are not checked.
    if (sections_.size() < 2) throw ModelLoadError(net.where() + ": the network has no layers");
    for (size_t i = 1; i < sections_.size(); ++i) plan_.layers.push_back(planLayer(sections_[i]));
    return std::move(plan_);
  }

 private:
  const Dims& previous() const { return plan_.layers.empty() ? plan_.input : plan_.layers.back().out; }

  void checkDims(const CfgSection& s, const Dims& d, const std::string& what) const {
    for (int64_t v : {d.c, d.h, d.w}) {
      if (v < 1 || v > kMaxDim) {
        throw ModelLoadError(s.where() + ": " + what + " " + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
                             std::to_string(d.w) + " must be positive and at most " + std::to_string(kMaxDim));
      }
    }
    if (d.c * d.h > kMaxNumel || d.numel() > kMaxNumel) {
      throw ModelLoadError(s.where() + ": " + what + " has more than " + std::to_string(kMaxNumel) + " elements");
    }
  }

  int64_t positive(CfgSection& s, const std::string& key, int64_t def, int64_t max) const {
    const int64_t v = s.getInt(key, def);
    if (v < 1 || v > max) {
      throw ModelLoadError(s.where(key) + ": " + key + "=" + std::to_string(v) + " must be in [1, " +
                           std::to_string(max) + "]");
    }
    return v;
  }

  // Resolves a darknet layer reference (negative: relative to this layer) to an earlier layer.
  int resolve(CfgSection& s, const std::string& key, int64_t ref) const {
    // Range first: s.index() + ref must not overflow on a hostile value.
    const int64_t idx = ref < -kMaxDim || ref > kMaxDim ? -1 : ref < 0 ? s.index() + ref : ref;
    if (idx < 0 || idx >= s.index()) {
      throw ModelLoadError(s.where(key) + ": " + key + " refers to layer " + std::to_string(idx) + " (" +
                           std::to_string(ref) + "), but only layers 0.." + std::to_string(s.index() - 1) +
                           " come before it");
    }
    return static_cast<int>(idx);
  }

  std::string activation(CfgSection& s, const std::string& def) const {
    const std::string a = s.getString("activation", def);
    if (supportedActivations().count(a)) return a;
    if (knownUnsupportedActivations().count(a)) {
      throw UnsupportedOpError(s.where("activation") + ": activation '" + a + "' is not supported by npuc's darknet "
                               "frontend (supported: linear, leaky, relu, relie, relu6, logistic, tanh, elu, hardtan, "
                               "mish, swish)");
    }
    // darknet itself falls back to relu with a warning; a typo would silently change the model.
    throw ModelLoadError(s.where("activation") + ": unknown activation '" + a + "'");
  }

  LayerPlan planLayer(CfgSection& s) {
    LayerPlan p;
    p.type = s.type();
    p.where = s.where();
    p.index = s.index();
    p.in = previous();
    auto kind = supportedTypes().find(s.type());
    if (kind == supportedTypes().end()) {
      if (knownUnsupportedTypes().count(s.type())) {
        throw UnsupportedOpError(s.where() + ": darknet layer type [" + s.type() + "] is not supported by npuc's "
                                 "darknet frontend (docs/frontend_darknet.md lists the supported layers)");
      }
      throw ModelLoadError(s.where() + ": unknown layer type [" + s.type() + "]");
    }
    p.kind = kind->second;
    switch (p.kind) {
      case LayerKind::Conv: planConv(s, p); break;
      case LayerKind::Connected: planConnected(s, p); break;
      case LayerKind::MaxPool: planMaxPool(s, p); break;
      case LayerKind::AvgPool: p.out = Dims{p.in.c, 1, 1}; break;
      case LayerKind::Route: planRoute(s, p); break;
      case LayerKind::Shortcut: planShortcut(s, p); break;
      case LayerKind::Upsample: planUpsample(s, p); break;
      case LayerKind::Reorg: planReorg(s, p); break;
      case LayerKind::Softmax: planSoftmax(s, p); break;
      case LayerKind::Output:
        // anchors, classes, masks, loss weights: they decode the raw tensor, which npuc outputs
        // as it is (as RKNN does); the decoding stays in the user's post-processing.
        p.out = p.in;
        return finish(s, p);
      case LayerKind::Identity: p.out = p.in; break;
    }
    s.refuseUnusedKeys(kTrainingKeys);
    return finish(s, p);
  }

  LayerPlan finish(CfgSection& s, LayerPlan& p) {
    checkDims(s, p.out, "the output");
    // Caps keep the sum in int64 whatever the cfg says; a real file is far smaller (yolov3: 2^26).
    if (p.num_params > kMaxParams || plan_.total_params > kMaxParams * 64) {
      throw ModelLoadError(s.where() + ": needs more than " + std::to_string(kMaxParams) + " weights");
    }
    plan_.total_params += p.num_params;
    return p;
  }

  void planConv(CfgSection& s, LayerPlan& p) {
    p.filters = positive(s, "filters", 1, kMaxDim);
    p.size = positive(s, "size", 1, kMaxKernel);
    p.stride = positive(s, "stride", 1, kMaxKernel);
    const int64_t pad_flag = s.getInt("pad", 0);
    int64_t padding = s.getInt("padding", 0);
    if (pad_flag) padding = p.size / 2;  // darknet: `pad` means "same" padding and wins over `padding`
    if (padding < 0 || padding > kMaxKernel) throw ModelLoadError(s.where("padding") + ": padding must be in [0, 1024]");
    p.pad = padding;
    p.groups = positive(s, "groups", 1, kMaxDim);
    p.batch_normalize = s.getInt("batch_normalize", 0) != 0;
    for (const char* k : {"binary", "xnor"}) {
      if (s.getInt(k, 0) != 0) throw UnsupportedOpError(s.where(k) + ": " + k + "=1 convolutions are not supported");
    }
    p.activation = activation(s, "logistic");
    if (p.in.c % p.groups != 0 || p.filters % p.groups != 0) {
      throw ModelLoadError(s.where("groups") + ": groups=" + std::to_string(p.groups) + " must divide both the " +
                           std::to_string(p.in.c) + " input channels and filters=" + std::to_string(p.filters));
    }
    const int64_t oh = (p.in.h + 2 * p.pad - p.size) / p.stride + 1;
    const int64_t ow = (p.in.w + 2 * p.pad - p.size) / p.stride + 1;
    if (p.in.h + 2 * p.pad < p.size || p.in.w + 2 * p.pad < p.size) {
      throw ModelLoadError(s.where("size") + ": kernel size " + std::to_string(p.size) + " is larger than the padded " +
                           std::to_string(p.in.h) + "x" + std::to_string(p.in.w) + " input");
    }
    p.out = Dims{p.filters, oh, ow};
    // biases, [scales, rolling_mean, rolling_variance], weights: load_convolutional_weights().
    p.num_params = p.filters * (p.batch_normalize ? 4 : 1) + p.filters * (p.in.c / p.groups) * p.size * p.size;
  }

  void planConnected(CfgSection& s, LayerPlan& p) {
    p.filters = positive(s, "output", 1, kMaxDim);
    p.batch_normalize = s.getInt("batch_normalize", 0) != 0;
    p.activation = activation(s, "logistic");
    p.out = Dims{p.filters, 1, 1};
    // biases, weights, [scales, rolling_mean, rolling_variance]: load_connected_weights().
    p.num_params = p.filters * (p.batch_normalize ? 4 : 1) + p.filters * p.in.numel();
  }

  void planMaxPool(CfgSection& s, LayerPlan& p) {
    p.stride = positive(s, "stride", 1, kMaxKernel);
    p.size = positive(s, "size", p.stride, kMaxKernel);
    p.pad_total = s.getInt("padding", p.size - 1);
    if (p.pad_total < 0 || p.pad_total > 2 * (p.size - 1)) {
      // Beyond that a window could hold padding only, where darknet outputs -FLT_MAX.
      throw ModelLoadError(s.where("padding") + ": padding=" + std::to_string(p.pad_total) + " must be in [0, " +
                           std::to_string(2 * (p.size - 1)) + "] for size=" + std::to_string(p.size));
    }
    if (p.in.h + p.pad_total < p.size || p.in.w + p.pad_total < p.size) {
      throw ModelLoadError(s.where("size") + ": pool size " + std::to_string(p.size) + " is larger than the " +
                           std::to_string(p.in.h) + "x" + std::to_string(p.in.w) + " input");
    }
    p.out = Dims{p.in.c, (p.in.h + p.pad_total - p.size) / p.stride + 1, (p.in.w + p.pad_total - p.size) / p.stride + 1};
  }

  void planRoute(CfgSection& s, LayerPlan& p) {
    for (int64_t ref : s.getInts("layers")) p.sources.push_back(resolve(s, "layers", ref));
    p.groups = positive(s, "groups", 1, kMaxDim);
    p.group_id = s.getInt("group_id", 0);
    if (p.group_id < 0 || p.group_id >= p.groups) {
      throw ModelLoadError(s.where("group_id") + ": group_id=" + std::to_string(p.group_id) + " must be in [0, groups)");
    }
    const Dims& first = plan_.layers[static_cast<size_t>(p.sources.front())].out;
    p.out = Dims{0, first.h, first.w};
    for (int src : p.sources) {
      const Dims& d = plan_.layers[static_cast<size_t>(src)].out;
      if (d.h != first.h || d.w != first.w) {
        throw ModelLoadError(s.where("layers") + ": layer " + std::to_string(src) + " is " + std::to_string(d.h) + "x" +
                             std::to_string(d.w) + " but layer " + std::to_string(p.sources.front()) + " is " +
                             std::to_string(first.h) + "x" + std::to_string(first.w) + ": a route concatenates "
                             "channels of same-sized layers");
      }
      if (d.c % p.groups != 0) {
        throw ModelLoadError(s.where("groups") + ": groups=" + std::to_string(p.groups) + " does not divide the " +
                             std::to_string(d.c) + " channels of layer " + std::to_string(src));
      }
      p.out.c += d.c / p.groups;
    }
  }

  void planShortcut(CfgSection& s, LayerPlan& p) {
    p.sources = {resolve(s, "from", s.getInts("from").front())};
    if (s.getInts("from").size() != 1) {
      throw UnsupportedOpError(s.where("from") + ": a shortcut from several layers is not supported");
    }
    p.alpha = s.getFloat("alpha", 1.0f);
    p.beta = s.getFloat("beta", 1.0f);
    p.activation = activation(s, "linear");
    const Dims& from = plan_.layers[static_cast<size_t>(p.sources[0])].out;
    p.out = p.in;
    // shortcut_cpu(): the `from` layer is read with stride w_from / w_out; a smaller `from` layer
    // (sample > 1) would be added to a sparse grid of positions, which npuc does not build.
    if (from.w < p.in.w || from.h < p.in.h) {
      throw UnsupportedOpError(s.where("from") + ": a shortcut from a smaller layer (" + std::to_string(from.h) + "x" +
                               std::to_string(from.w) + " into " + std::to_string(p.in.h) + "x" +
                               std::to_string(p.in.w) + ") is not supported");
    }
    if (from.w / p.in.w != from.h / p.in.h) {
      throw ModelLoadError(s.where("from") + ": layer " + std::to_string(p.sources[0]) + " (" + std::to_string(from.h) +
                           "x" + std::to_string(from.w) + ") does not subsample evenly to " + std::to_string(p.in.h) +
                           "x" + std::to_string(p.in.w));
    }
    const bool partial = from.w != p.in.w || from.h != p.in.h || from.c != p.in.c;
    if (partial && p.alpha != 1.0f) {
      // darknet scales only the positions it adds to by alpha; npuc builds alpha for full adds only.
      throw UnsupportedOpError(s.where("alpha") + ": alpha != 1 on a shortcut between layers of different sizes");
    }
  }

  void planUpsample(CfgSection& s, LayerPlan& p) {
    const int64_t stride = s.getInt("stride", 2);
    if (stride < 0) {
      throw UnsupportedOpError(s.where("stride") + ": a negative upsample stride (darknet's downsampling) is not supported");
    }
    if (stride < 1 || stride > 64) throw ModelLoadError(s.where("stride") + ": stride must be in [1, 64]");
    p.stride = stride;
    p.scale = s.getFloat("scale", 1.0f);
    p.out = Dims{p.in.c, p.in.h * stride, p.in.w * stride};
  }

  void planReorg(CfgSection& s, LayerPlan& p) {
    p.stride = positive(s, "stride", 1, 64);
    for (const char* k : {"reverse", "flatten", "extra"}) {
      if (s.getInt(k, 0) != 0) throw UnsupportedOpError(s.where(k) + ": reorg with " + k + " is not supported");
    }
    const int64_t st = p.stride;
    if (p.in.c % (st * st) != 0 || p.in.h % st != 0 || p.in.w % st != 0) {
      throw ModelLoadError(s.where("stride") + ": reorg stride=" + std::to_string(st) + " needs channels divisible by " +
                           std::to_string(st * st) + " and height/width by " + std::to_string(st) + ", the input is " +
                           std::to_string(p.in.c) + "x" + std::to_string(p.in.h) + "x" + std::to_string(p.in.w));
    }
    p.out = Dims{p.in.c * st * st, p.in.h / st, p.in.w / st};
  }

  void planSoftmax(CfgSection& s, LayerPlan& p) {
    if (s.has("tree")) throw UnsupportedOpError(s.where("tree") + ": hierarchical (tree) softmax is not supported");
    p.groups = positive(s, "groups", 1, kMaxNumel);
    p.temperature = s.getFloat("temperature", 1.0f);
    if (p.temperature == 0.0f) throw ModelLoadError(s.where("temperature") + ": temperature must not be 0");
    // spatial=1: a softmax over channels at every position (darknet's softmax_cpu over c with
    // stride h*w); else over each of `groups` contiguous slices of the flattened C*H*W.
    p.spatial = s.getFloat("spatial", 0.0f) != 0.0f;
    if (p.in.numel() % p.groups != 0) {
      throw ModelLoadError(s.where("groups") + ": groups=" + std::to_string(p.groups) + " does not divide the " +
                           std::to_string(p.in.numel()) + " inputs");
    }
    p.out = p.in;
  }

  std::vector<CfgSection>& sections_;
  NetPlan plan_;
};

}  // namespace

NetPlan planNetwork(std::vector<CfgSection>& sections) { return Planner(sections).run(); }

}  // namespace npuc::darknet
