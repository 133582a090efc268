// Integer 2-D convolution (NCHW, grouped, strided, padded, dilated) of int8 activations with
// symmetric int8 weights, int32 accumulation and per-output-channel requantization
// (docs/quantization.md section 3). Two implementations that must agree to the bit:
//
//   int8ConvReference  the formula as written: acc = b_q + sum (q_x - z_x) * q_w over the
//                      in-bounds taps (padding is real 0), then requantizeToInt8 per element;
//   Int8ConvFast       the deployment form: z_x folded into the bias at construction, the input
//                      copied once into padded phase-split planes (phase_plane.h, padding = z_x)
//                      whose contiguous runs are the rows of the packed u8 x s8 GEMM
//                      (int8_gemm_kernel.h, AVX-512 VNNI when compiled for it; no im2col), and
//                      the vector per-channel requantization (requant_row.h); one input channel
//                      per group (depthwise) runs a direct int32 loop over the same planes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/requant.h"
#include "quant/sim/int8_gemm_kernel.h"

namespace npuc::quant {

struct ConvGeometry {
  int64_t batch = 1, in_channels = 1, in_h = 1, in_w = 1;
  int64_t out_channels = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t groups = 1;

  int64_t inPerGroup() const { return in_channels / groups; }
  int64_t outPerGroup() const { return out_channels / groups; }
  // Reduction length per output element.
  int64_t reduction() const { return inPerGroup() * kernel_h * kernel_w; }
};

// Everything an int8 conv needs besides its input; weights are [Cout, Cin/g, kh, kw].
struct Int8ConvParams {
  ConvGeometry geometry;
  std::vector<int8_t> weights;
  std::vector<int32_t> bias;  // b_q per output channel (zeros when the node has no bias)
  int32_t input_zero_point = 0;
  std::vector<FixedPointMultiplier> multipliers;  // s_x * s_w[c] / s_y per output channel
  int32_t output_zero_point = 0;
};

// Throws ConfigError naming `what` when sizes disagree with the geometry or when the worst-case
// accumulator (reduction * 255 * 127 + |bias|) could overflow int32.
void validateInt8Conv(const Int8ConvParams& p, const std::string& what);

void int8ConvReference(const Int8ConvParams& p, const int8_t* x, int8_t* y);

class Int8ConvFast {
 public:
  explicit Int8ConvFast(Int8ConvParams params);
  // Scratch bytes run() needs (split input planes, tap row pointers, one packed activation panel;
  // the direct path: its plane, accumulators and virtual outputs).
  size_t workspaceBytes() const;
  void run(const int8_t* x, int8_t* y, void* workspace) const;
  const Int8ConvParams& params() const { return p_; }

 private:
  // One input channel per group (depthwise): a direct loop beats packing a 1-row GEMM.
  bool direct() const { return p_.geometry.inPerGroup() == 1; }
  // 1x1, stride 1, no padding: the input planes are the GEMM's B rows as they are.
  bool pointwise() const;
  // Whether a column panel of `panel_columns` positions costs less as wide tiles (32 channels x
  // 8 positions, int8_gemm_kernel.h): the last panel of a 7x7 or 14x14 output.
  bool wideTail(int64_t panel_columns) const;
  void runGemm(const int8_t* x, int8_t* y, uint8_t* workspace) const;
  void runDirect(const int8_t* x, int8_t* y, uint8_t* workspace) const;

  Int8ConvParams p_;
  std::vector<PackedGemmWeights> packed_;  // per group (GEMM path)
  // Per channel: the folded bias b_q[c] - z * sum_k q_w[c, k] (z = z_x + 128 on the GEMM path,
  // which reads q_x + 128 and pads with z_x + 128; z = z_x on the direct path, which reads q_x
  // and pads with z_x: padding cancels exactly), the multiplier and its vector constants.
  std::vector<ChannelRequant> channel_requant_;
  std::vector<int32_t> weights32_;   // widened weights (direct path)
  bool pair_taps_in_int16_ = false;  // direct path: no weight is -128 (see runDirect)
  // Direct path, VNNI (depthwise_groups.h): the taps' four-byte groups, per channel their weight
  // dwords and the bias folded for the u8 plane (b_q - (z_x + 128) * sum q_w).
  std::vector<int64_t> group_offsets_;
  std::vector<int32_t> group_weights_;  // [out channel][group]
  std::vector<int32_t> unsigned_bias_;
};

}  // namespace npuc::quant
