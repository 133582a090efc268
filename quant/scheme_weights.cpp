#include "quant/scheme_weights.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/scheme_qparams.h"

namespace npuc::quant {

namespace {

// The int4 multiplier range: group scales are scales[c] * m, m in [1, kGroupMultiplierMax].
constexpr int32_t kGroupMultiplierMax = 255;

void checkLayout(const Tensor& w, const WeightChannelLayout& layout, const QuantScheme& scheme,
                 const std::string& tensor) {
  if (scheme.dtype == SchemeDType::W8A8)
    throw ConfigError("weight '" + tensor +
                      "': w8a8 weights are quantized by quantizeWeights, not the scheme path");
  if (w.dtype() != DType::Float32)
    throw Error("weight '" + tensor + "': expected float32, got " + dtypeName(w.dtype()));
  if (layout.groups != 1)
    throw ConfigError("weight '" + tensor + "': " + describeScheme(scheme) +
                      " weights need a one-group channel layout (Conv, Gemm, MatMul)");
  if (w.numel() % (layout.numChannels() * layout.inner) != 0)
    throw ShapeError("weight '" + tensor + "' " + shapeStr(w.shape()) +
                     ": does not match its output-channel layout");
}

int64_t reductionLength(const Tensor& w, const WeightChannelLayout& layout) {
  return w.numel() / layout.numChannels();
}

int64_t groupsPerChannel(int64_t reduction, int64_t group_size) {
  return group_size > 0 ? (reduction + group_size - 1) / group_size : 1;
}

std::vector<float> channelAbsMax(const float* w, int64_t n, const WeightChannelLayout& layout) {
  std::vector<float> m(static_cast<size_t>(layout.numChannels()), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float& v = m[static_cast<size_t>(layout.channelOf(i))];
    v = std::max(v, std::fabs(w[i]));  // NaN ignored
  }
  return m;
}

// Channel scales from max|w| (per tensor: the tensor's); a channel whose own scale is not a normal
// float borrows the tensor-wide one (its weights then quantize to 0), as weight_quant.cpp does.
std::vector<float> channelScales(const std::vector<float>& abs_max, WeightGranularity granularity,
                                 const QuantScheme& scheme, double divisor, std::vector<int64_t>& borrowed) {
  auto scaleOf = [&](float a) {
    return scheme.weight_group > 0 ? static_cast<float>(a / divisor) : schemeWeightScale(a, scheme);
  };
  const float tensor_max = abs_max.empty() ? 0.0f : *std::max_element(abs_max.begin(), abs_max.end());
  const float tensor_scale =
      scaleOf(tensor_max) >= std::numeric_limits<float>::min() ? scaleOf(tensor_max) : kDegenerateRangeScale;
  std::vector<float> scales(abs_max.size(), tensor_scale);
  if (granularity == WeightGranularity::PerTensor && scheme.weight_group == 0) return scales;
  for (size_t c = 0; c < abs_max.size(); ++c) {
    const float own = scaleOf(abs_max[c]);
    if (own >= std::numeric_limits<float>::min()) {
      scales[c] = own;
    } else {
      borrowed.push_back(static_cast<int64_t>(c));
    }
  }
  return scales;
}

}  // namespace

QuantizedWeights quantizeSchemeWeights(const Tensor& weights, const WeightChannelLayout& layout,
                                       WeightGranularity granularity, const QuantScheme& scheme,
                                       const std::string& tensor) {
  checkLayout(weights, layout, scheme, tensor);
  const float* w = weights.data<float>();
  const int64_t n = weights.numel();
  const std::vector<float> abs_max = channelAbsMax(w, n, layout);
  std::vector<int64_t> borrowed;
  const double divisor = static_cast<double>(scheme.weightMax()) * kGroupMultiplierMax;
  const std::vector<float> scales = channelScales(abs_max, granularity, scheme, divisor, borrowed);
  std::vector<int32_t> multipliers;
  if (scheme.weight_group > 0) {
    const int64_t reduction = reductionLength(weights, layout);
    const int64_t groups = groupsPerChannel(reduction, scheme.weight_group);
    std::vector<float> group_max(static_cast<size_t>(layout.numChannels() * groups), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = layout.channelOf(i);
      float& m =
          group_max[static_cast<size_t>(c * groups + reductionIndexOf(layout, i) / scheme.weight_group)];
      m = std::max(m, std::fabs(w[i]));
    }
    multipliers.assign(group_max.size(), 1);
    for (int64_t c = 0; c < layout.numChannels(); ++c) {
      const double a_c = abs_max[static_cast<size_t>(c)];
      if (std::count(borrowed.begin(), borrowed.end(), c) || !(a_c > 0.0)) continue;
      for (int64_t g = 0; g < groups; ++g) {
        const double ratio = kGroupMultiplierMax * (group_max[static_cast<size_t>(c * groups + g)] / a_c);
        multipliers[static_cast<size_t>(c * groups + g)] =
            std::clamp(static_cast<int32_t>(std::ceil(ratio)), 1, kGroupMultiplierMax);
      }
    }
  }
  QuantizedWeights q = quantizeSchemeWeightsWithScales(weights, layout, scales, scheme.weight_group,
                                                       multipliers, granularity, scheme, tensor);
  q.borrowed_channels = std::move(borrowed);
  return q;
}

QuantizedWeights quantizeSchemeWeightsWithScales(const Tensor& weights, const WeightChannelLayout& layout,
                                                 const std::vector<float>& scales, int64_t group_size,
                                                 const std::vector<int32_t>& group_multipliers,
                                                 WeightGranularity granularity, const QuantScheme& scheme,
                                                 const std::string& tensor) {
  checkLayout(weights, layout, scheme, tensor);
  if (static_cast<int64_t>(scales.size()) != layout.numChannels())
    throw ShapeError("weight '" + tensor + "': " + std::to_string(scales.size()) + " scales for " +
                     std::to_string(layout.numChannels()) + " output channels");
  for (float s : scales)
    if (!(s > 0.0f) || !std::isfinite(s))
      throw ConfigError("weight '" + tensor + "': scale must be positive");
  const int64_t reduction = reductionLength(weights, layout);
  const int64_t groups = groupsPerChannel(reduction, group_size);
  if (group_size > 0 && static_cast<int64_t>(group_multipliers.size()) != layout.numChannels() * groups)
    throw ShapeError("weight '" + tensor + "': " + std::to_string(group_multipliers.size()) +
                     " group multipliers for " + std::to_string(layout.numChannels()) + " channels x " +
                     std::to_string(groups) + " groups of " + std::to_string(group_size));
  for (int32_t m : group_multipliers)
    if (m < 1 || m > kGroupMultiplierMax)
      throw ConfigError("weight '" + tensor + "': group multiplier " + std::to_string(m) +
                        " outside [1, 255]");

  const float* w = weights.data<float>();
  const int32_t qmax = scheme.weightMax();
  QuantizedWeights q;
  q.granularity = granularity;
  q.scales = scales;
  q.group_size = group_size;
  q.group_multipliers = group_multipliers;
  q.values = Tensor(scheme.weight_bits == 16 ? DType::Int16 : DType::Int8, weights.shape());
  for (int64_t i = 0; i < weights.numel(); ++i) {
    const int64_t c = layout.channelOf(i);
    double scale = scales[static_cast<size_t>(c)];
    if (group_size > 0)
      scale *= group_multipliers[static_cast<size_t>(c * groups + reductionIndexOf(layout, i) / group_size)];
    // The group scale in double: scales[c] * m is exactly what the integer accumulation applies.
    const double scaled = static_cast<double>(w[i]) / scale;
    const int64_t v = roundHalfAwayClamped(scaled, -qmax, qmax, 0);
    if (scheme.weight_bits == 16) {
      q.values.data<int16_t>()[i] = static_cast<int16_t>(v);
    } else {
      q.values.data<int8_t>()[i] = static_cast<int8_t>(v);
    }
  }
  return q;
}

std::vector<int64_t> quantizeBiasWide(const float* bias, int64_t n, float input_scale,
                                      const std::vector<float>& weight_scales, const std::string& tensor) {
  if (static_cast<size_t>(n) != weight_scales.size())
    throw ShapeError("bias '" + tensor + "' has " + std::to_string(n) + " elements but the weight has " +
                     std::to_string(weight_scales.size()) + " output channels");
  constexpr int64_t kBound = int64_t{1} << 62;
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    const double scale = static_cast<double>(input_scale) * weight_scales[static_cast<size_t>(c)];
    values[static_cast<size_t>(c)] =
        roundHalfAwayClamped(static_cast<double>(bias[c]) / scale, -kBound, kBound, 0);
  }
  return values;
}

}  // namespace npuc::quant
