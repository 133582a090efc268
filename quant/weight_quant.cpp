#include "quant/weight_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/qparams.h"

namespace npuc::quant {
namespace {

[[noreturn]] void throwShape(const std::string& tensor, const std::string& op, const Shape& shape,
                             const std::string& why) {
  throw ShapeError(op + " weight '" + tensor + "' " + shapeStr(shape) + ": " + why);
}

int64_t productFrom(const Shape& s, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < s.size(); ++i) p *= s[i];
  return p;
}

// Per-channel max|w|; NaN weights are ignored here and quantize to 0.
std::vector<float> channelAbsMax(const float* w, int64_t n, const WeightChannelLayout& layout) {
  std::vector<float> abs_max(static_cast<size_t>(layout.numChannels()), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float& m = abs_max[static_cast<size_t>(layout.channelOf(i))];
    m = std::max(m, std::fabs(w[i]));  // std::max keeps m when fabs(w) is NaN
  }
  return abs_max;
}

// Per-channel scales max|w| / 127 (or the tensor's for PerTensor); channels whose own scale is
// not a normal float borrow the tensor's.
std::vector<float> channelScales(const std::vector<float>& abs_max, WeightGranularity granularity,
                                 std::vector<int64_t>& borrowed) {
  const float tensor_max = abs_max.empty() ? 0.0f : *std::max_element(abs_max.begin(), abs_max.end());
  const float tensor_scale = symmetricWeightScale(tensor_max) >= std::numeric_limits<float>::min()
                                 ? symmetricWeightScale(tensor_max)
                                 : kDegenerateRangeScale;
  std::vector<float> scales(abs_max.size(), tensor_scale);
  if (granularity == WeightGranularity::PerTensor) return scales;
  for (size_t c = 0; c < abs_max.size(); ++c) {
    const float own = symmetricWeightScale(abs_max[c]);
    if (own >= std::numeric_limits<float>::min()) {
      scales[c] = own;
    } else {
      borrowed.push_back(static_cast<int64_t>(c));
    }
  }
  return scales;
}

// Per-channel sum of |q_w| at `scales`: the channel's share of the accumulator's worst case.
std::vector<int64_t> channelAbsSums(const float* w, int64_t n, const WeightChannelLayout& layout,
                                    const std::vector<float>& scales) {
  std::vector<int64_t> sums(scales.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = static_cast<size_t>(layout.channelOf(i));
    sums[c] += std::abs(int32_t{quantizeValue(w[i], QuantParams{scales[c], 0}, -kWeightQMax, kWeightQMax)});
  }
  return sums;
}

// The smallest float s with |bias| / (input_scale * s) <= budget, computed as quantizeBias divides.
float biasScaleFloor(float bias, float input_scale, int64_t budget) {
  const double exact = std::fabs(static_cast<double>(bias)) / (static_cast<double>(input_scale) * budget);
  float s = static_cast<float>(exact);
  while (std::fabs(static_cast<double>(bias)) / (static_cast<double>(input_scale) * s) > budget)
    s = std::nextafter(s, std::numeric_limits<float>::infinity());
  return s;
}

// Raises the scales so every channel's int32 bias fits the accumulator headroom its weights
// leave. A raised scale only shrinks |q_w|, so the headroom measured before the raise holds.
void applyBiasFloor(const float* w, int64_t n, const WeightChannelLayout& layout, const BiasFit& fit,
                    WeightGranularity granularity, const std::string& tensor, QuantizedWeights& q) {
  if (fit.size != static_cast<int64_t>(q.scales.size()))
    throw ShapeError("bias of weight '" + tensor + "' has " + std::to_string(fit.size) +
                     " elements but the weight has " + std::to_string(q.scales.size()) + " output channels");
  if (!(fit.input_scale > 0.0f)) return;
  const std::vector<int64_t> abs_sums = channelAbsSums(w, n, layout, q.scales);
  std::vector<float> floors(q.scales.size(), 0.0f);
  for (size_t c = 0; c < q.scales.size(); ++c) {
    // One below the headroom: the division in quantizeBias may round up by an ulp.
    const int64_t budget = biasHeadroom(abs_sums[c]) - 1;
    if (budget <= 0) {
      throw ConfigError("weight '" + tensor + "': output channel " + std::to_string(c) + " adds " +
                        std::to_string(n / layout.numChannels()) + " int8 products (sum of |q_w| " +
                        std::to_string(abs_sums[c]) +
                        ") whose worst case exceeds the int32 accumulator; run the layer in FP16 "
                        "(hybrid_layers) or split its reduction");
    }
    if (std::isfinite(fit.bias[c])) floors[c] = biasScaleFloor(fit.bias[c], fit.input_scale, budget);
  }
  if (granularity == WeightGranularity::PerTensor) {
    const float floor = *std::max_element(floors.begin(), floors.end());
    if (floor <= q.scales[0]) return;
    std::fill(q.scales.begin(), q.scales.end(), floor);
    for (size_t c = 0; c < q.scales.size(); ++c) q.raised_channels.push_back(static_cast<int64_t>(c));
    return;
  }
  for (size_t c = 0; c < q.scales.size(); ++c) {
    if (floors[c] > q.scales[c]) {
      q.scales[c] = floors[c];
      q.raised_channels.push_back(static_cast<int64_t>(c));
    }
  }
}

void checkWeights(const Tensor& weights, const WeightChannelLayout& layout, const std::string& tensor) {
  if (weights.dtype() != DType::Float32)
    throw Error("weight '" + tensor + "': expected float32, got " + dtypeName(weights.dtype()));
  const int64_t n = weights.numel();
  if (n % (layout.numChannels() * layout.inner) != 0 ||
      (layout.groups > 1 &&
       n != layout.groups * layout.rows_per_group * layout.channels_per_group * layout.inner))
    throw ShapeError("weight '" + tensor + "' " + shapeStr(weights.shape()) +
                     ": does not match its output-channel layout");
}

Tensor quantizeValues(const Tensor& weights, const WeightChannelLayout& layout, const std::vector<float>& scales) {
  const float* w = weights.data<float>();
  Tensor values(DType::Int8, weights.shape());
  int8_t* out = values.data<int8_t>();
  for (int64_t i = 0; i < weights.numel(); ++i) {
    const QuantParams p{scales[static_cast<size_t>(layout.channelOf(i))], 0};
    out[i] = quantizeValue(w[i], p, -kWeightQMax, kWeightQMax);
  }
  return values;
}

}  // namespace

WeightGranularity weightGranularityFromName(const std::string& name) {
  if (name == "channel") return WeightGranularity::PerChannel;
  if (name == "layer") return WeightGranularity::PerTensor;
  throw ConfigError("unknown quantized_method '" + name + "' (expected 'channel' or 'layer')");
}

WeightChannelLayout convWeightLayout(const Shape& w, const std::string& tensor) {
  if (w.size() < 3) throwShape(tensor, "Conv", w, "expected [Cout, Cin/group, kernel...]");
  if (w[0] <= 0) throwShape(tensor, "Conv", w, "has no output channel");
  return WeightChannelLayout{w[0], productFrom(w, 1), 1, 1};
}

WeightChannelLayout convTransposeWeightLayout(const Shape& w, int64_t group, const std::string& tensor) {
  if (w.size() < 3) throwShape(tensor, "ConvTranspose", w, "expected [Cin, Cout/group, kernel...]");
  if (group <= 0 || w[0] % group != 0)
    throwShape(tensor, "ConvTranspose", w, "input channels not divisible by group=" + std::to_string(group));
  if (w[1] <= 0) throwShape(tensor, "ConvTranspose", w, "has no output channel");
  return WeightChannelLayout{w[1], productFrom(w, 2), group, w[0] / group};
}

WeightChannelLayout gemmWeightLayout(const Shape& b, bool trans_b, const std::string& tensor) {
  if (b.size() != 2) throwShape(tensor, "Gemm", b, "expected a 2-D B");
  // trans_b: B is [N, K], channel axis 0 with K elements each; else [K, N], channel axis 1.
  if (trans_b) return WeightChannelLayout{b[0], b[1], 1, 1};
  return WeightChannelLayout{b[1], 1, 1, 1};
}

WeightChannelLayout matmulWeightLayout(const Shape& b, const std::string& tensor) {
  if (b.empty()) throwShape(tensor, "MatMul", b, "B must have at least one dimension");
  if (b.size() == 1) return WeightChannelLayout{1, b[0], 1, 1};
  return WeightChannelLayout{b.back(), 1, 1, 1};
}

QuantizedWeights quantizeWeights(const Tensor& weights, const WeightChannelLayout& layout,
                                 WeightGranularity granularity, const std::string& tensor, const BiasFit* bias_fit) {
  checkWeights(weights, layout, tensor);
  const float* w = weights.data<float>();
  const int64_t n = weights.numel();
  QuantizedWeights q;
  q.granularity = granularity;
  q.scales = channelScales(channelAbsMax(w, n, layout), granularity, q.borrowed_channels);
  if (bias_fit) applyBiasFloor(w, n, layout, *bias_fit, granularity, tensor, q);
  q.values = quantizeValues(weights, layout, q.scales);
  return q;
}

QuantizedWeights quantizeWeightsWithScales(const Tensor& weights, const WeightChannelLayout& layout,
                                           const std::vector<float>& scales, WeightGranularity granularity,
                                           const std::string& tensor) {
  checkWeights(weights, layout, tensor);
  if (static_cast<int64_t>(scales.size()) != layout.numChannels())
    throw ShapeError("weight '" + tensor + "': " + std::to_string(scales.size()) + " scales for " +
                     std::to_string(layout.numChannels()) + " output channels");
  for (float s : scales)
    if (!(s > 0.0f) || !std::isfinite(s)) throw ConfigError("weight '" + tensor + "': scale must be positive");
  QuantizedWeights q;
  q.granularity = granularity;
  q.scales = scales;
  q.values = quantizeValues(weights, layout, scales);
  return q;
}

QuantizedBias quantizeBias(const float* bias, int64_t n, float input_scale,
                           const std::vector<float>& weight_scales, const std::string& tensor) {
  if (static_cast<size_t>(n) != weight_scales.size())
    throw ShapeError("bias '" + tensor + "' has " + std::to_string(n) + " elements but the weight has " +
                     std::to_string(weight_scales.size()) + " output channels");
  QuantizedBias q;
  q.values.resize(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    // The product in double: s_in * s_w can be below float's normal range for tiny scales.
    const double scale = static_cast<double>(input_scale) * weight_scales[static_cast<size_t>(c)];
    const double v = static_cast<double>(bias[c]) / scale;
    const int64_t r = roundHalfAwayClamped(v, kInt32Min, kInt32Max, 0);
    // A value that rounds to an int32 limit only counts as saturated when it was clipped.
    if (std::isinf(v) || std::fabs(v) > static_cast<double>(kInt32Max) + 0.5)
      q.saturated_channels.push_back(c);
    q.values[static_cast<size_t>(c)] = static_cast<int32_t>(r);
  }
  return q;
}

}  // namespace npuc::quant
