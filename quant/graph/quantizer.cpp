#include "quant/graph/quantizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "opset/op_traits.h"
#include "quant/graph/given_params.h"
#include "quant/graph/op_quant_class.h"
#include "quant/graph/scheme_kernels.h"
#include "quant/scheme_qparams.h"
#include "quant/scheme_weights.h"

namespace npuc::quant {

namespace {

bool isFloatActivation(const Value* v) {
  return v && v->dtype() == DType::Float32 && !v->isConstant();
}

// The plan entry of an activation: int8 or int16 per tensor, as the scheme says.
TensorQuant activationEntry(QuantParams p, const QuantScheme& scheme) {
  TensorQuant t = TensorQuant::perTensor(p);
  if (scheme.activation_bits == 16) t.dtype = QuantDType::Int16;
  return t;
}

// Per-tensor activation parameters for a float constant feeding an element-wise int8 op
// (e.g. Mul by a constant): its own min/max, so the constant is represented as well as int8 can.
QuantParams constantParams(const Value* v, const QuantScheme& scheme) {
  const Tensor& t = v->constant();
  const float* d = t.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    lo = std::min(lo, d[i]);
    hi = std::max(hi, d[i]);
  }
  return chooseSchemeActivationParams(lo, hi, scheme, v->name().c_str());
}

// The only consumer of `v` when it is an int8 Relu/Clip, else null.
const Node* soleClampConsumer(const Value* v, const QuantizerOptions& options) {
  if (v->isGraphOutput() || v->uses().size() != 1) return nullptr;
  const Node* user = v->uses()[0].user;
  if (v->uses()[0].index != 0 || options.hybrid_layers.count(user->name())) return nullptr;
  return classifyForInt8(*user) == QuantOpKind::ClampActivation ? user : nullptr;
}

class PlanBuilder {
 public:
  PlanBuilder(const Graph& g, const std::map<std::string, ClipRange>& ranges, const QuantizerOptions& o)
      : graph_(g), ranges_(ranges), options_(o) {
    plan_.weight_granularity = o.granularity;
    plan_.scheme = o.scheme;
  }

  QuantPlan build() {
    checkHybridNames();
    shareConcatScales();
    for (const Value* in : graph_.inputs())
      if (isFloatActivation(in)) setCalibrated(in->name(), in->name());
    for (const Node* n : graph_.nodes()) planNode(*n);
    return std::move(plan_);
  }

 private:
  void checkHybridNames() const {
    for (const std::string& name : options_.hybrid_layers) {
      if (!graph_.findNode(name)) {
        throw ConfigError("hybrid_layers: '" + name + "' is not a node of the graph (use the node names of " +
                          "the optimized model)");
      }
    }
  }

  // A Concat input used only by that int8 Concat is quantized with the Concat's calibrated range:
  // its value ends up on the Concat's grid anyway, and producing it there directly rounds once
  // instead of twice (a separate rescale in the Concat). In ShuffleNetV2 the pass-through half of
  // every block was rescaled at each Concat, 16 extra roundings along the chain. Inputs whose
  // parameters come from their own input (Slice, MaxPool, ...) are unaffected: they are never
  // calibrated by name.
  void shareConcatScales() {
    for (const Node* n : graph_.nodes()) {
      if (classifyForInt8(*n) != QuantOpKind::Concat || options_.hybrid_layers.count(n->name())) continue;
      const Value* out = n->output(0);
      if (!out) continue;
      // The Concat's own grid: its Relu/Clip's range when it feeds only one (fused clamp).
      const Node* clamp = soleClampConsumer(out, options_);
      const std::string& grid = clamp ? clamp->output(0)->name() : out->name();
      if (!ranges_.count(grid)) continue;
      for (const Value* v : n->inputs()) {
        if (!isFloatActivation(v) || !v->producer() || v->isGraphOutput() || v->uses().size() != 1) continue;
        range_source_[v->name()] = grid;
      }
    }
  }

  void setCalibrated(const std::string& value, std::string range_of) {
    if (const TensorQuant* given = givenActivation(options_, value, range_of)) {  // an imported QDQ model's
      plan_.tensors[value] = *given;
      return;
    }
    if (auto shared = range_source_.find(range_of); shared != range_source_.end()) range_of = shared->second;
    auto it = ranges_.find(range_of);
    if (it == ranges_.end())
      throw ConfigError("calibration produced no range for activation '" + range_of + "'");
    plan_.tensors[value] = activationEntry(
        chooseSchemeActivationParams(it->second.min, it->second.max, options_.scheme, value.c_str()),
        options_.scheme);
  }

  const TensorQuant& paramsOfInput(const Value* v) {
    if (!plan_.has(v->name())) {
      if (!v->isConstant())
        throw ConfigError("activation '" + v->name() + "' has no quantization parameters");
      const TensorQuant* given = givenActivation(options_, v->name(), v->name());
      plan_.tensors[v->name()] =
          given ? *given : activationEntry(constantParams(v, options_.scheme), options_.scheme);
    }
    return plan_.tensors.at(v->name());
  }

  void planNode(const Node& n) {
    const QuantOpKind kind = classifyForInt8(n);
    if (kind == QuantOpKind::NonFloat) return;
    const bool hybrid = options_.hybrid_layers.count(n.name()) != 0;
    // At 16-bit activations the kinds without a wide integer kernel run FP16 (scheme_kernels.h).
    const NodePrecision precision = (!hasSchemeIntegerKernel(kind, options_.scheme) || hybrid)
                                        ? NodePrecision::Float16
                                        : NodePrecision::Int8;
    plan_.nodes[n.name()] = precision;
    if (hybrid)
      plan_.warnings.push_back("node '" + n.name() + "' (" + n.opType() + ") runs in FP16 (hybrid_layers)");

    // Every float activation input needs parameters (constants of element-wise ops get theirs).
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const Value* v = n.input(i);
      if (isFloatActivation(v)) paramsOfInput(v);
    }
    if (precision == NodePrecision::Int8) planInt8Node(n, kind);
    for (const Value* out : n.outputs()) {
      if (out && out->dtype() == DType::Float32 && !plan_.has(out->name()))
        setCalibrated(out->name(), out->name());
    }
  }

  void planInt8Node(const Node& n, QuantOpKind kind) {
    if (keepsInputParams(kind)) {
      const TensorQuant in = paramsOfInput(n.input(0));
      for (const Value* out : n.outputs())
        if (out) plan_.tensors[out->name()] = in;
      return;
    }
    if (kind == QuantOpKind::Add || kind == QuantOpKind::Mul || kind == QuantOpKind::Concat ||
        kind == QuantOpKind::MatMulActivation) {
      for (const Value* v : n.inputs())
        if (v && v->dtype() == DType::Float32) paramsOfInput(v);
    }
    if (kind == QuantOpKind::Conv || kind == QuantOpKind::Gemm || kind == QuantOpKind::MatMulConst) {
      planWeights(n);
    }
    if (canFuseClamp(kind)) {
      const Value* out = n.output(0);
      if (const Node* clamp = soleClampConsumer(out, options_)) {
        setCalibrated(out->name(), clamp->output(0)->name());
      }
    }
  }

  void planWeights(const Node& n) {
    if (options_.scheme.dtype != SchemeDType::W8A8) {
      planSchemeWeights(n);
      return;
    }
    const Value* w = n.input(1);
    const Value* b = n.hasInput(2) && n.input(2)->isConstant() ? n.input(2) : nullptr;
    const float s_in = paramsOfInput(n.input(0)).params(n.input(0)->name()).scale;
    BiasFit fit;
    if (b) fit = BiasFit{b->constant().data<float>(), b->constant().numel(), s_in};
    const std::optional<std::vector<float>> given = givenWeightScales(options_, n);
    const QuantizedWeights qw = given ? quantizeWeightsWithScales(w->constant(), weightLayoutOf(n), *given,
                                                                  options_.granularity, w->name())
                                      : quantizeWeights(w->constant(), weightLayoutOf(n),
                                                        options_.granularity, w->name(), b ? &fit : nullptr);
    TensorQuant wq;
    wq.scales = qw.scales;
    wq.zero_points.assign(qw.scales.size(), 0);
    wq.axis = n.opType() == "Conv" ? 0 : (n.opType() == "Gemm" && n.attrs().i("transB", 0) ? 0 : 1);
    plan_.tensors[w->name()] = wq;
    reportScaleAdjustments(n, qw, b);

    WeightOutlierRow row =
        measureWeightOutliers(w->name(), w->constant().data<float>(), w->constant().numel());
    if (row.flagged) {
      plan_.warnings.push_back(
          fmt::format("weight '{}' of node '{}' has outliers (max|w| / robust range = {:f}): {}", w->name(),
                      n.name(), row.ratio, row.suggestion));
    }
    plan_.weight_outliers.push_back(std::move(row));

    if (!b) return;
    QuantizedBias qb =
        quantizeBias(b->constant().data<float>(), b->constant().numel(), s_in, qw.scales, b->name());
    if (!qb.saturated_channels.empty()) {
      plan_.warnings.push_back(fmt::format("bias '{}' of node '{}': {} channel(s) saturated int32", b->name(),
                                           n.name(), qb.saturated_channels.size()));
    }
    TensorQuant bq;
    for (float s : qw.scales) bq.scales.push_back(static_cast<float>(static_cast<double>(s_in) * s));
    bq.zero_points.assign(bq.scales.size(), 0);
    bq.axis = 0;
    bq.dtype = QuantDType::Int32;
    bq.given_values = givenBiasIntegers(options_, b->name(), bq.scales, plan_.warnings);
    plan_.tensors[b->name()] = bq;
  }

  static int64_t weightAxisOf(const Node& n) {
    return n.opType() == "Conv" ? 0 : (n.opType() == "Gemm" && n.attrs().i("transB", 0) ? 0 : 1);
  }

  // The wide-accumulator dtypes (quant/scheme_weights.h): weights at 4/8/16 bits (grouped for
  // w4a16), int64 biases at s_in * scales[c] (no bias floor: int64 holds any real bias).
  void planSchemeWeights(const Node& n) {
    const QuantScheme& scheme = options_.scheme;
    const Value* w = n.input(1);
    const Value* b = n.hasInput(2) && n.input(2)->isConstant() ? n.input(2) : nullptr;
    const float s_in = paramsOfInput(n.input(0)).params(n.input(0)->name()).scale;
    const QuantizedWeights qw =
        quantizeSchemeWeights(w->constant(), weightLayoutOf(n), options_.granularity, scheme, w->name());
    TensorQuant wq;
    wq.scales = qw.scales;
    wq.zero_points.assign(qw.scales.size(), 0);
    wq.axis = weightAxisOf(n);
    wq.dtype = scheme.weight_bits == 4 ? QuantDType::Int4
                                       : (scheme.weight_bits == 16 ? QuantDType::Int16 : QuantDType::Int8);
    wq.group_size = qw.group_size;
    wq.group_multipliers = qw.group_multipliers;
    plan_.tensors[w->name()] = wq;
    reportScaleAdjustments(n, qw, b);
    WeightOutlierRow row =
        measureWeightOutliers(w->name(), w->constant().data<float>(), w->constant().numel());
    plan_.weight_outliers.push_back(std::move(row));
    if (!b) return;
    TensorQuant bq;
    for (float s : qw.scales) bq.scales.push_back(static_cast<float>(static_cast<double>(s_in) * s));
    bq.zero_points.assign(bq.scales.size(), 0);
    bq.axis = 0;
    bq.dtype = QuantDType::Int64;
    plan_.tensors[b->name()] = bq;
  }

  // Says which channels' weight scales are not max|w| / 127, and why (docs/quantization.md).
  void reportScaleAdjustments(const Node& n, const QuantizedWeights& qw, const Value* b) {
    const std::string& w = n.input(1)->name();
    if (!qw.raised_channels.empty()) {
      plan_.warnings.push_back("weight '" + w + "' of node '" + n.name() + "': scale raised on " +
                               channelList(qw.raised_channels) + " so the int32 bias '" + b->name() +
                               "' fits the accumulator (weights negligible next to the bias)");
    }
    if (!qw.borrowed_channels.empty()) {
      plan_.warnings.push_back("weight '" + w + "' of node '" + n.name() +
                               "': " + channelList(qw.borrowed_channels) +
                               " all zero or below 1e-36: quantized to 0 at the tensor's scale");
    }
  }

  static std::string channelList(const std::vector<int64_t>& channels) {
    constexpr size_t kShown = 8;
    const size_t shown = std::min(channels.size(), kShown);
    return fmt::format(
        "{} channel(s) ({}{})", channels.size(),
        fmt::join(channels.begin(), channels.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        channels.size() > kShown ? ", ..." : "");
  }

  const Graph& graph_;
  const std::map<std::string, ClipRange>& ranges_;
  const QuantizerOptions& options_;
  // Value name -> the value whose calibrated range it is quantized with (shareConcatScales).
  std::map<std::string, std::string> range_source_;
  QuantPlan plan_;
};

}  // namespace

WeightChannelLayout weightLayoutOf(const Node& node) {
  const Value* w = node.input(1);
  const std::string& op = node.opType();
  if (op == "Conv") return convWeightLayout(w->shape(), w->name());
  if (op == "Gemm") return gemmWeightLayout(w->shape(), node.attrs().i("transB", 0) != 0, w->name());
  if (op == "MatMul") return matmulWeightLayout(w->shape(), w->name());
  throw UnsupportedOpError("node '" + node.name() + "' (" + op + ") has no int8 weight layout");
}

QuantizedWeights quantizeNodeWeights(const Node& node, const QuantPlan& plan) {
  const Value* w = node.input(1);
  if (!plan.has(w->name()))
    throw ConfigError("node '" + node.name() + "' (" + node.opType() + "): weight '" + w->name() +
                      "' has no scales in the quantization plan");
  const TensorQuant& entry = plan.at(w->name());
  if (plan.scheme.dtype != SchemeDType::W8A8) {
    return quantizeSchemeWeightsWithScales(w->constant(), weightLayoutOf(node), entry.scales,
                                           entry.group_size, entry.group_multipliers, plan.weight_granularity,
                                           plan.scheme, w->name());
  }
  return quantizeWeightsWithScales(w->constant(), weightLayoutOf(node), entry.scales, plan.weight_granularity,
                                   w->name());
}

namespace {

bool isParameterSlot(const Use& u) {
  return (u.index == 1 || u.index == 2) && opTraits(*u.user).has(OpTrait::WeightLinear);
}

}  // namespace

size_t separateSharedParameters(Graph& graph) {
  size_t added = 0;
  for (Value* v : graph.values()) {
    if (!v->isConstant() || v->numConsumers() < 2) continue;
    // Parameter slots get copies; the original stays with the other readers, or, if there are
    // none, with the first parameter slot.
    std::vector<Use> uses = v->uses();
    bool first = !v->isGraphOutput() && std::all_of(uses.begin(), uses.end(), isParameterSlot);
    for (const Use& u : uses) {
      if (!isParameterSlot(u)) continue;
      if (first) {
        first = false;
        continue;
      }
      Value* copy =
          graph.addConstant(v->constant().clone(), graph.uniqueName(v->name() + "_" + u.user->name()));
      u.user->setInput(u.index, copy);
      ++added;
    }
  }
  return added;
}

QuantPlan buildQuantPlan(const Graph& graph, const std::map<std::string, ClipRange>& ranges,
                         const QuantizerOptions& options) {
  for (const Value* v : graph.values()) {
    if (!v->isConstant() || v->numConsumers() < 2) continue;
    for (const Use& u : v->uses())
      if (isParameterSlot(u))
        throw ConfigError("constant '" + v->name() + "' is a parameter of node '" + u.user->name() +
                          "' and has other readers: run separateSharedParameters before quantizing");
  }
  return PlanBuilder(graph, ranges, options).build();
}

std::vector<int64_t> nodeBiasIntegers(const Node& node, const QuantPlan& plan, float s_x,
                                      const std::vector<float>& s_w) {
  if (!node.hasInput(2)) return std::vector<int64_t>(s_w.size(), 0);
  const Value* b = node.input(2);
  const TensorQuant* planned = plan.has(b->name()) ? &plan.at(b->name()) : nullptr;
  if (planned && !planned->given_values.empty()) {
    if (planned->given_values.size() != s_w.size())
      throw ConfigError(fmt::format("bias '{}' of node '{}': the plan gives {} integers for {} channels",
                                    b->name(), node.name(), planned->given_values.size(), s_w.size()));
    return planned->given_values;
  }
  const Tensor& f = b->constant();
  if (plan.scheme.wideAccumulator() || (planned && planned->dtype == QuantDType::Int64))
    return quantizeBiasWide(f.data<float>(), f.numel(), s_x, s_w, b->name());
  const QuantizedBias qb = quantizeBias(f.data<float>(), f.numel(), s_x, s_w, b->name());
  return std::vector<int64_t>(qb.values.begin(), qb.values.end());
}

}  // namespace npuc::quant
