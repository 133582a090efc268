// The conv epilogue of the fast simulator: int8 output = requantizeToInt8(acc + bias, m, z_out)
// for a row of accumulators, with AVX-512 when compiled for it (16 accumulators per step, the
// exact 64-bit product and the one half-away-from-zero rounding of quant/requant.h) and the
// reference function otherwise. Bit-identical to requantizeToInt8 for every input.
#pragma once
#include <cstdint>

#include "quant/requant.h"

namespace npuc::quant {

// out[i] = requantizeToInt8(acc[i] + bias, m, output_zero_point). acc[i] + bias must fit int32
// (it is the true accumulator of the layer, which validateInt8Conv bounds).
void requantizeRowToInt8(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out);

// `rows` rows at once (one micro tile): row r reads acc + r * acc_stride, adds biases[r], uses
// multipliers[r] and writes out + r * out_stride. Same result as one call per row.
void requantizeRowsToInt8(const int32_t* acc, int64_t rows, int64_t n, int64_t acc_stride,
                          const int32_t* biases, const FixedPointMultiplier* multipliers,
                          int32_t output_zero_point, int8_t* out, int64_t out_stride);

}  // namespace npuc::quant
