// Weights and biases of the #17 dtypes other than w8a8 (quant/quant_scheme.h):
//   w8a16            symmetric int8 in [-127, 127], per channel or per tensor;
//   w16a16i(_dfp)    symmetric int16 in [-32767, 32767]; dfp scales rounded up to powers of two;
//   w4a16 groupN     int4 in [-7, 7] per channel, the reduction cut into groups of N elements:
//                    scales[c] = A_c / (7 * 255) with A_c = max|w| of channel c, and per group
//                    the integer multiplier max(1, ceil(255 * a_cg / A_c)) in [1, 255] (a_cg the
//                    group's max|w|), so group scale = scales[c] * multiplier and nothing clips.
// Biases are int64 at s_x * scales[c]: the wide accumulator has room for any real bias, so no
// channel's weight scale is raised for its bias (weight_quant.h's BiasFit is an int32 matter).
// w8a8 stays in weight_quant.h; these functions refuse it.
#pragma once

#include <string>
#include <vector>

#include "quant/quant_scheme.h"
#include "quant/weight_quant.h"

namespace npuc::quant {

// The position of flat weight element i in its channel's reduction (the order the MAC kernel
// reduces it: Cin/g * kh * kw for Conv, K for Gemm / MatMul), for layouts with groups == 1.
inline int64_t reductionIndexOf(const WeightChannelLayout& layout, int64_t flat_index) {
  return (flat_index / (layout.channels_per_group * layout.inner)) * layout.inner + flat_index % layout.inner;
}

// Decides the scales (and group multipliers) of `weights` for `scheme` and quantizes them.
// Throws ConfigError for w8a8 (weight_quant.h decides those) or a ConvTranspose-style layout
// (groups > 1) with grouped weights; ShapeError when the layout does not fit.
QuantizedWeights quantizeSchemeWeights(const Tensor& weights, const WeightChannelLayout& layout,
                                       WeightGranularity granularity, const QuantScheme& scheme,
                                       const std::string& tensor);

// The values of `weights` at given scales / group multipliers (a plan's entry): what the
// simulator and the exports read, so they quantize exactly as the quantizer decided.
QuantizedWeights quantizeSchemeWeightsWithScales(const Tensor& weights, const WeightChannelLayout& layout,
                                                 const std::vector<float>& scales, int64_t group_size,
                                                 const std::vector<int32_t>& group_multipliers,
                                                 WeightGranularity granularity, const QuantScheme& scheme,
                                                 const std::string& tensor);

// int64 biases: round_half_away(bias[c] / (input_scale * weight_scales[c])), computed in double,
// clamped to +-2^62 (never reached by a finite float bias at a normal scale product).
std::vector<int64_t> quantizeBiasWide(const float* bias, int64_t n, float input_scale,
                                      const std::vector<float>& weight_scales, const std::string& tensor);

}  // namespace npuc::quant
