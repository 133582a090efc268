#include "quant/graph/given_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "quant/graph/op_quant_class.h"

namespace npuc::quant {

namespace {

bool hasConstantWeights(QuantOpKind k) {
  return k == QuantOpKind::Conv || k == QuantOpKind::Gemm || k == QuantOpKind::MatMulConst;
}

// The MAC node reading `v` as its weight (input 1) or bias (input 2), and which.
const Node* macReader(const Value* v, size_t index) {
  for (const Use& u : v->uses())
    if (u.index == index && hasConstantWeights(classifyForInt8(*u.user))) return u.user;
  return nullptr;
}

// Scale of flat element i of a tensor of `shape` under `t` (per tensor or along t.axis).
struct ElementScale {
  const TensorQuant& t;
  int64_t inner = 1, channels = 1;
  ElementScale(const TensorQuant& tq, const Shape& shape) : t(tq) {
    if (t.axis < 0) return;
    channels = shape.at(static_cast<size_t>(t.axis));
    for (size_t d = static_cast<size_t>(t.axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  size_t channel(int64_t i) const { return t.axis < 0 ? 0 : static_cast<size_t>((i / inner) % channels); }
};

// True when the constant's float values are still (q - z) * s of the file's integers: no pass
// changed it.
bool unchanged(const Value* v, const TensorQuant& t, const Tensor& ints) {
  const Tensor& f = v->constant();
  if (f.dtype() != DType::Float32 || f.shape() != ints.shape()) return false;
  const ElementScale es(t, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) {
    const size_t c = es.channel(i);
    const int32_t q = ints.dtype() == DType::Int32 ? ints.data<int32_t>()[i] : ints.data<int8_t>()[i];
    if (f.data<float>()[i] != static_cast<float>(q - t.zero_points[c]) * t.scales[c]) return false;
  }
  return true;
}

class Fitter {
 public:
  Fitter(const Graph& g, const Graph& source, const std::map<std::string, TensorQuant>& given,
         const std::map<std::string, Tensor>& integers, bool strict)
      : g_(g), source_(source), given_(given), integers_(integers), strict_(strict) {}

  GivenFit run() {
    for (const auto& [name, t] : given_) {
      const Value* v = g_.findValue(name);
      if (!v) {
        if (const Value* renamed = rekeyed(name, t)) {
          out_.given[renamed->name()] = t;
          ++out_.rekeyed;
        } else {
          ++out_.dropped_missing;
        }
        continue;
      }
      if (!v->isConstant()) {
        keep(name, t);
        continue;
      }
      auto ints = integers_.find(name);
      if (ints != integers_.end() && !unchanged(v, t, ints->second)) {
        ++out_.dropped_changed;
        out_.notes.push_back("constant '" + name +
                             "': changed by the optimizer; its given parameters are not used");
        continue;
      }
      if (const Node* n = macReader(v, 1)) {
        fitWeight(*n, v, t, ints == integers_.end() ? nullptr : &ints->second);
      } else if (macReader(v, 2)) {
        keep(name, t);  // checked once the weights are decided (checkBiases)
      } else if (t.isPerTensor() && t.dtype == QuantDType::Int8) {
        keep(name, t);  // a constant read as an activation (Mul operand, Concat input)
      }
    }
    checkBiases();
    return std::move(out_);
  }

 private:
  // The activation of `graph` that stands where the source's value `name` stood: read by the same
  // node at the same input, or at the same graph-output position; null if none or ambiguous.
  const Value* rekeyed(const std::string& name, const TensorQuant& t) const {
    const Value* old = source_.findValue(name);
    if (!old || old->isConstant() || !t.isPerTensor()) return nullptr;
    const Value* found = nullptr;
    auto take = [&](const Value* v) {
      if (!v || v->isConstant() || v->dtype() != DType::Float32 || given_.count(v->name())) return true;
      if (found && found != v) return false;
      found = v;
      return true;
    };
    for (const Use& u : old->uses()) {
      const Node* reader = g_.findNode(u.user->name());
      if (reader && reader->opType() == u.user->opType() && !take(reader->input(u.index))) return nullptr;
    }
    const auto& outs = source_.outputs();
    for (size_t i = 0; i < outs.size() && i < g_.outputs().size(); ++i)
      if (outs[i] == old && !take(g_.outputs()[i])) return nullptr;
    return found;
  }

  void keep(const std::string& name, const TensorQuant& t) {
    out_.given[name] = t;
    ++out_.kept;
  }

  // Symmetric, one scale per output channel of npuc's layout, in [-127, 127]: kept exactly.
  // Otherwise npuc's own symmetric scales, with the error that introduces.
  void fitWeight(const Node& n, const Value* w, const TensorQuant& t, const Tensor* ints) {
    const WeightChannelLayout layout = weightLayoutOf(n);
    const Tensor& f = w->constant();
    const ElementScale es(t, f.shape());
    std::vector<float> scales(static_cast<size_t>(layout.numChannels()), 0.0f);
    std::string why;
    int64_t at_minus_128 = 0;  // PyTorch's symmetric qint8 weights reach -128; npuc's stop at -127
    for (int64_t i = 0; i < f.numel() && why.empty(); ++i) {
      const size_t c = es.channel(i);
      float& s = scales[static_cast<size_t>(layout.channelOf(i))];
      if (t.zero_points[c] != 0)
        why = fmt::format("asymmetric (zero point {})", t.zero_points[c]);
      else if (s != 0.0f && s != t.scales[c])
        why = "scales along an axis other than the output channels";
      s = t.scales[c];
      if (ints && ints->dtype() == DType::Int8 && ints->data<int8_t>()[i] == -128) ++at_minus_128;
    }
    if (why.empty() && at_minus_128) {
      const std::string line = fmt::format(
          "weight '{}' of node '{}' ({}): {} value(s) at -128 clamped to -127 (error 1 LSB each, at most "
          "{:.3g})",
          w->name(), n.name(), n.opType(), at_minus_128, *std::max_element(t.scales.begin(), t.scales.end()));
      if (strict_) throw ConfigError("QDQ import (qdq_strict): " + line);
      out_.notes.push_back(line);
    }
    if (why.empty()) {
      TensorQuant kept = t;
      kept.scales = scales;
      kept.zero_points.assign(scales.size(), 0);
      kept.axis = n.opType() == "Conv" ? 0 : (n.opType() == "Gemm" && n.attrs().i("transB", 0) ? 0 : 1);
      keep(w->name(), kept);
      return;
    }
    // npuc's symmetric per-channel scales on the dequantized values, and the error they make.
    const QuantizedWeights qw = quantizeWeights(f, layout, WeightGranularity::PerChannel, w->name());
    double max_err = 0.0, max_lsb = 0.0;
    for (int64_t i = 0; i < f.numel(); ++i) {
      const float s = qw.scales[static_cast<size_t>(layout.channelOf(i))];
      const double err = std::fabs(double{f.data<float>()[i]} - double{s} * qw.values.data<int8_t>()[i]);
      max_err = std::max(max_err, err);
      max_lsb = std::max(max_lsb, err / t.scales[es.channel(i)]);
    }
    const std::string line = fmt::format(
        "weight '{}' of node '{}' ({}): {}; requantized symmetric per channel: max error {:.3g} "
        "({:.3f} LSB of the given scale)",
        w->name(), n.name(), n.opType(), why, max_err, max_lsb);
    if (strict_) throw ConfigError("QDQ import (qdq_strict): " + line);
    out_.notes.push_back(line);
    ++out_.requantized;
  }

  // Each kept int32 bias carries the file's integers (TensorQuant::given_values): the float
  // constant holds integers exactly only up to 2^24, so requantizing it at s_in * s_w[c] can miss
  // the file's value by a few units (npuc's raised scales of dead channels put biases near 2^31).
  // The quantizer uses them when the bias scale it plans equals the file's (givenBiasIntegers).
  // Says which biases the float value alone would not have reproduced.
  void checkBiases() {
    for (const auto& [name, ints] : integers_) {
      const Value* b = g_.findValue(name);
      if (!b || ints.dtype() != DType::Int32 || !out_.given.count(name)) continue;
      const Node* n = macReader(b, 2);
      if (!n) continue;
      const bool attached = ints.numel() == b->constant().numel();
      if (attached) {
        std::vector<int64_t>& kept = out_.given.at(name).given_values;
        kept.assign(ints.data<int32_t>(), ints.data<int32_t>() + ints.numel());
      }
      auto x = out_.given.find(n->input(0)->name());
      auto w = out_.given.find(n->input(1)->name());
      if (x == out_.given.end() || w == out_.given.end() || !x->second.isPerTensor()) continue;
      const Tensor& f = b->constant();
      if (f.numel() != static_cast<int64_t>(w->second.scales.size())) continue;
      const QuantizedBias qb =
          quantizeBias(f.data<float>(), f.numel(), x->second.scales[0], w->second.scales, name);
      int64_t differ = 0, worst = 0;
      for (int64_t c = 0; c < f.numel(); ++c) {
        const int64_t d = std::llabs(int64_t{qb.values[static_cast<size_t>(c)]} - ints.data<int32_t>()[c]);
        differ += d != 0;
        worst = std::max(worst, d);
      }
      if (differ == 0) continue;
      ++(attached ? out_.bias_integers_needed : out_.inexact_biases);
      out_.notes.push_back(fmt::format(
          "bias '{}' of node '{}': {} of {} int32 values requantized from the float constant "
          "would differ from the file's by up to {}{}",
          name, n->name(), differ, f.numel(), worst, attached ? "; the file's integers are kept" : ""));
    }
  }

  const Graph& g_;
  const Graph& source_;
  const std::map<std::string, TensorQuant>& given_;
  const std::map<std::string, Tensor>& integers_;
  bool strict_;
  GivenFit out_;
};

}  // namespace

GivenFit fitGivenParameters(const Graph& graph, const Graph& source,
                            const std::map<std::string, TensorQuant>& given,
                            const std::map<std::string, Tensor>& integers, bool strict) {
  return Fitter(graph, source, given, integers, strict).run();
}

const TensorQuant* givenActivation(const QuantizerOptions& options, const std::string& value,
                                   const std::string& range_of) {
  for (const std::string* name : {&value, &range_of}) {
    auto it = options.given.find(*name);
    if (it != options.given.end() && it->second.isPerTensor() && it->second.dtype == QuantDType::Int8)
      return &it->second;
  }
  return nullptr;
}

std::optional<std::vector<float>> givenWeightScales(const QuantizerOptions& options, const Node& n) {
  auto it = options.given.find(n.input(1)->name());
  if (it == options.given.end()) return std::nullopt;
  const int64_t channels = weightLayoutOf(n).numChannels();
  if (it->second.isPerTensor())
    return std::vector<float>(static_cast<size_t>(channels), it->second.scales.at(0));
  if (static_cast<int64_t>(it->second.scales.size()) != channels) return std::nullopt;
  return it->second.scales;
}

std::vector<int64_t> givenBiasIntegers(const QuantizerOptions& options, const std::string& bias,
                                       const std::vector<float>& scales, std::vector<std::string>& warnings) {
  auto it = options.given.find(bias);
  if (it == options.given.end() || it->second.given_values.empty()) return {};
  const TensorQuant& t = it->second;
  const std::vector<float> file =
      t.isPerTensor() && !t.scales.empty() ? std::vector<float>(scales.size(), t.scales[0]) : t.scales;
  std::string why;
  if (t.given_values.size() != scales.size() || file.size() != scales.size()) {
    why = fmt::format("{} integers and {} scales for {} channels", t.given_values.size(), file.size(),
                      scales.size());
  } else {
    for (size_t c = 0; c < scales.size() && why.empty(); ++c) {
      // The file's bias scale is float(s_x * s_w[c]) as npuc and ONNX Runtime write it; a relative
      // difference above a few float ulps means the integers are on another grid.
      const double rel =
          std::fabs(double{file[c]} - scales[c]) / std::max(1e-45, std::fabs(double{scales[c]}));
      if (rel > 1e-6)
        why =
            fmt::format("channel {}: the file's bias scale {} is not s_in * s_w = {}", c, file[c], scales[c]);
    }
  }
  if (why.empty()) return t.given_values;
  warnings.push_back("bias '" + bias + "': the file's integers are not used (" + why +
                     "); requantized from the float constant");
  return {};
}

int64_t givenBiasesNotUsed(const QuantPlan& plan, const std::map<std::string, TensorQuant>& given) {
  int64_t n = 0;
  for (const auto& [name, t] : given)
    n += !t.given_values.empty() && plan.has(name) && plan.at(name).given_values.empty();
  return n;
}

std::vector<std::string> givenNotKept(const QuantPlan& plan,
                                      const std::map<std::string, TensorQuant>& given) {
  std::vector<std::string> out;
  for (const auto& [name, t] : given) {
    if (!t.isPerTensor() || t.dtype != QuantDType::Int8 || !plan.has(name)) continue;
    const TensorQuant& p = plan.at(name);
    if (!p.isPerTensor() || p.scales != t.scales || p.zero_points != t.zero_points) {
      out.push_back(
          fmt::format("activation '{}': the file gives scale {} zero point {}, the plan keeps {} / {} "
                      "(shared-scale rule of its producer)",
                      name, t.scales[0], t.zero_points[0], p.scales.at(0), p.zero_points.at(0)));
    }
  }
  return out;
}

}  // namespace npuc::quant
