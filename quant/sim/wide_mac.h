// Integer multiply-accumulate kernels of the wide-accumulator dtypes (w8a16, w16a16i,
// w16a16i_dfp, w4a16; quant/quant_scheme.h): int16 activations, int4/int8/int16 weights (held as
// int16 here), int64 biases and accumulators, optional weight groups, and one requantization per
// output channel (quant/requant_wide.h) to int16. For output channel c:
//
//   acc = b_q[c] + sum_g m[c, g] * sum_{k in group g} (q_x[k] - z_x) * q_w[c, k]
//   y   = saturate_int16(apply(acc, M_c) + z_y),   M_c = s_x * scales[c] / s_y
//
// (ungrouped: one group with m = 1). Each op has a reference loop that reads like the formula
// and a fast path (zero point subtracted once into an int32 panel, contiguous int64 dot products)
// that agree to the bit: both are exact integer sums, so only an overflow could separate them,
// and |(q_x - z_x) * q_w| < 2^31 keeps any real reduction far below 2^63.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/requant.h"
#include "quant/sim/int8_conv.h"

namespace npuc::quant {

// The geometry of a 2-D Conv node (pads resolved from auto_pad); defined with the int8 steps.
ConvGeometry convGeometryOf(const Node& n);

// Weight groups of one output channel: `size` reduction elements share multipliers[g]
// (size 0: the whole reduction is one group with multiplier 1).
struct WeightGroups {
  int64_t size = 0;
  std::vector<int32_t> multipliers;  // [channels * groupsPer(reduction)]

  int64_t groupsPer(int64_t reduction) const { return size > 0 ? (reduction + size - 1) / size : 1; }
};

struct WideConvParams {
  ConvGeometry geometry;
  std::vector<int16_t> weights;  // [Cout, Cin/g, kh, kw]
  std::vector<int64_t> bias;     // per output channel
  WeightGroups groups;
  int32_t input_zero_point = 0;
  std::vector<FixedPointMultiplier> multipliers;  // per output channel
  int32_t output_zero_point = 0;
};

struct WideLinearParams {
  int64_t rows = 1, depth = 1, columns = 1;  // M, K, N
  std::vector<int16_t> weights;              // [N, K]
  std::vector<int64_t> bias;                 // [N]
  WeightGroups groups;
  int32_t input_zero_point = 0;
  std::vector<FixedPointMultiplier> multipliers;  // [N]
  int32_t output_zero_point = 0;
};

// A [batch, M, K] x B [batch, K, N], both int16 activations: acc = sum_k (q_a - z_a)(q_b - z_b).
struct WideBatchMatMulParams {
  int64_t batch = 1, m = 1, k = 1, n = 1;
  int32_t zero_point_a = 0, zero_point_b = 0;
  FixedPointMultiplier multiplier;
  int32_t output_zero_point = 0;
};

// ConfigError naming `what` when sizes disagree.
void validateWideConv(const WideConvParams& p, const std::string& what);
void validateWideLinear(const WideLinearParams& p, const std::string& what);

void wideConvReference(const WideConvParams& p, const int16_t* x, int16_t* y);
void wideConvFast(const WideConvParams& p, const int16_t* x, int16_t* y);
void wideLinearReference(const WideLinearParams& p, const int16_t* x, int16_t* y);
void wideLinearFast(const WideLinearParams& p, const int16_t* x, int16_t* y);
void wideBatchMatMulReference(const WideBatchMatMulParams& p, const int16_t* a, const int16_t* b, int16_t* y);
void wideBatchMatMulFast(const WideBatchMatMulParams& p, const int16_t* a, const int16_t* b, int16_t* y);

}  // namespace npuc::quant
