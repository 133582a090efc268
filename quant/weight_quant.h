// Weight and bias quantization: symmetric int8 weights ([-127, 127], zero point 0) with one
// scale per output channel ("channel") or per tensor ("layer"), and int32 biases at scale
// input_scale * weight_scale[c], so that bias adds straight into the int32 accumulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace npuc::quant {

enum class WeightGranularity { PerChannel, PerTensor };

// "channel" or "layer" (RKNN-Toolkit2's quantized_method); throws ConfigError otherwise.
WeightGranularity weightGranularityFromName(const std::string& name);

// Where the output channel of each weight element is. Output channel c of a flat index i:
//   row   = i / (channels_per_group * inner)          (index along the axis before the channel axis)
//   local = (i / inner) % channels_per_group
//   c     = (row / rows_per_group) * channels_per_group + local    (c = local when groups == 1)
// Conv, Gemm and MatMul have groups = 1. ConvTranspose's weight is
// [Cin, Cout/g, kh, kw]: its output channel is group * Cout/g + j, where the group is given by
// the input-channel row, so the channel axis 1 combines with the groups on axis 0.
struct WeightChannelLayout {
  int64_t channels_per_group = 1;
  int64_t inner = 1;
  int64_t groups = 1;
  int64_t rows_per_group = 1;

  int64_t numChannels() const { return groups * channels_per_group; }
  int64_t channelOf(int64_t flat_index) const {
    const int64_t local = (flat_index / inner) % channels_per_group;
    if (groups == 1) return local;
    const int64_t row = flat_index / (channels_per_group * inner);
    return (row / rows_per_group) * channels_per_group + local;
  }
};

// Each throws ShapeError naming `tensor` when the shape does not fit the op.
// Conv: [Cout, Cin/g, k...] -> channel axis 0.
WeightChannelLayout convWeightLayout(const Shape& w, const std::string& tensor);
// ConvTranspose: [Cin, Cout/g, k...] with `group` groups -> Cout = g * dim 1 channels.
WeightChannelLayout convTransposeWeightLayout(const Shape& w, int64_t group, const std::string& tensor);
// Gemm B: [K, N] (trans_b = 0) or [N, K] (trans_b = 1) -> N channels.
WeightChannelLayout gemmWeightLayout(const Shape& b, bool trans_b, const std::string& tensor);
// MatMul B: [..., K, N] -> N channels (last axis); a 1-D B has a single output channel.
WeightChannelLayout matmulWeightLayout(const Shape& b, const std::string& tensor);

struct QuantizedWeights {
  // Same shape as the float weight: int8 in [-127, 127] (w8a8, w8a16), int8 holding int4 values in
  // [-7, 7] one per byte (w4a16), or int16 in [-32767, 32767] (w16a16i, w16a16i_dfp).
  Tensor values;
  std::vector<float> scales;  // one per output channel in both modes (all equal for PerTensor)
  WeightGranularity granularity = WeightGranularity::PerChannel;
  // Channels whose scale was raised above max|w| / 127 so that their int32 bias fits the
  // accumulator (BiasFit below); with PerTensor, every channel when the shared scale was raised.
  std::vector<int64_t> raised_channels;
  // Channels whose own scale would not be a normal float (all-zero weights, or "dead" channels
  // with max|w| near 1e-38): they take the tensor-wide scale, and their weights quantize to 0.
  std::vector<int64_t> borrowed_channels;
  // Grouped weights (w4a16, quant/scheme_weights.h): groups of `group_size` reduction elements per
  // channel, group g of channel c at scale scales[c] * group_multipliers[c * groups + g].
  int64_t group_size = 0;
  std::vector<int32_t> group_multipliers;
};

// The layer's float bias and the scale of its input activation. Given to quantizeWeights, it
// floors each channel's weight scale so that bias[c] / (input_scale * s_w[c]) fits in what the
// int32 accumulator leaves after the channel's products (biasHeadroom in quant/int_limits.h),
// as TFLite and ONNX Runtime floor theirs. Only a channel whose weights are negligible next to
// its bias is affected: at s_w = max|w| / 127 the bias needs the raise once |bias| exceeds about
// 1.7e7 * max|w| * input_scale (a dead channel, |w| ~ 1e-15, with an ordinary folded bias).
struct BiasFit {
  const float* bias = nullptr;
  int64_t size = 0;
  float input_scale = 0.0f;
};

// Scale of a channel = max|w| / 127, then the bias floor when `bias_fit` is given. A channel
// whose scale would not be a normal float borrows the tensor-wide scale (any scale represents
// it, and the borrowed one keeps its bias as precise as its neighbours'); an all-zero tensor
// gets kDegenerateRangeScale. Throws ShapeError if the layout or the bias does not match the
// tensor, Error if it is not float32, ConfigError naming the tensor and channel if a channel's
// products alone could overflow int32 (a reduction too deep for int8: FP16 is the remedy).
QuantizedWeights quantizeWeights(const Tensor& weights, const WeightChannelLayout& layout,
                                 WeightGranularity granularity, const std::string& tensor,
                                 const BiasFit* bias_fit = nullptr);

// The int8 values of `weights` at given per-channel scales (a plan's): what the simulator, the
// lowering and the QDQ export use, so that they quantize exactly as the quantizer decided.
QuantizedWeights quantizeWeightsWithScales(const Tensor& weights, const WeightChannelLayout& layout,
                                           const std::vector<float>& scales, WeightGranularity granularity,
                                           const std::string& tensor);

struct QuantizedBias {
  std::vector<int32_t> values;
  // Channels whose bias did not fit int32 at scale s_in * s_w[c] and was clamped. Non-empty
  // means the layer's scales are pathological (tiny weight scale with a large bias); the
  // graph-level quantizer reports it by tensor name.
  std::vector<int64_t> saturated_channels;
};

// values[c] = saturate_int32(round_half_away(bias[c] / (input_scale * weight_scales[c]))).
QuantizedBias quantizeBias(const float* bias, int64_t n, float input_scale,
                           const std::vector<float>& weight_scales, const std::string& tensor);

}  // namespace npuc::quant
