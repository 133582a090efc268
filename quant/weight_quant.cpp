#include "quant/weight_quant.h"

#include <algorithm>
#include <cmath>

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

std::vector<float> channelScales(const std::vector<float>& abs_max, WeightGranularity granularity) {
  const float tensor_max = abs_max.empty() ? 0.0f : *std::max_element(abs_max.begin(), abs_max.end());
  const float tensor_scale = tensor_max > 0.0f ? symmetricWeightScale(tensor_max) : kDegenerateRangeScale;
  std::vector<float> scales(abs_max.size(), tensor_scale);
  if (granularity == WeightGranularity::PerTensor) return scales;
  for (size_t c = 0; c < abs_max.size(); ++c)
    if (abs_max[c] > 0.0f) scales[c] = symmetricWeightScale(abs_max[c]);
  return scales;
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
                                 WeightGranularity granularity, const std::string& tensor) {
  if (weights.dtype() != DType::Float32)
    throw Error("weight '" + tensor + "': expected float32, got " + dtypeName(weights.dtype()));
  const int64_t n = weights.numel();
  if (n % (layout.numChannels() * layout.inner) != 0 ||
      (layout.groups > 1 &&
       n != layout.groups * layout.rows_per_group * layout.channels_per_group * layout.inner))
    throw ShapeError("weight '" + tensor + "' " + shapeStr(weights.shape()) +
                     ": does not match its output-channel layout");
  const float* w = weights.data<float>();
  QuantizedWeights q;
  q.granularity = granularity;
  q.scales = channelScales(channelAbsMax(w, n, layout), granularity);
  q.values = Tensor(DType::Int8, weights.shape());
  int8_t* out = q.values.data<int8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const QuantParams p{q.scales[static_cast<size_t>(layout.channelOf(i))], 0};
    out[i] = quantizeValue(w[i], p, -kWeightQMax, kWeightQMax);
  }
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
