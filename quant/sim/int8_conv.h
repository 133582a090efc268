// Integer 2-D convolution (NCHW, grouped, strided, padded, dilated) of int8 activations with
// symmetric int8 weights, int32 accumulation and per-output-channel requantization
// (docs/quantization.md section 3). Two implementations that must agree to the bit:
//
//   int8ConvReference  the formula as written: acc = b_q + sum (q_x - z_x) * q_w over the
//                      in-bounds taps (padding is real 0), then requantizeToInt8 per element;
//   Int8ConvFast       the deployment form: z_x folded into the bias at construction, im2col
//                      with padding = z_x, a blocked int32 multiply-accumulate loop the compiler
//                      vectorizes, and the batch per-channel requantization.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/requant.h"

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
  // Scratch bytes run() needs (im2col columns and one accumulator row block).
  size_t workspaceBytes() const;
  void run(const int8_t* x, int8_t* y, void* workspace) const;
  const Int8ConvParams& params() const { return p_; }

 private:
  void im2col(const int8_t* image, int64_t group, int32_t* cols) const;
  Int8ConvParams p_;
  std::vector<int32_t> weights_;      // widened once so the inner loop is a plain int32 MAC
  std::vector<int32_t> folded_bias_;  // b_q[c] - z_x * sum_k q_w[c, k]
};

}  // namespace npuc::quant
