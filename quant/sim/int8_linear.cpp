#include "quant/sim/int8_linear.h"

#include <algorithm>
#include <cstdlib>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/sim/accumulator_check.h"

namespace npuc::quant {

void validateInt8Linear(const Int8LinearParams& p, const std::string& what) {
  const size_t n = static_cast<size_t>(p.columns);
  if (p.weights.size() != n * static_cast<size_t>(p.depth) || p.bias.size() != n ||
      p.multipliers.size() != n) {
    throw ConfigError(what + ": int8 weights/bias/multipliers do not match [" + std::to_string(p.columns) +
                      "x" + std::to_string(p.depth) + "]");
  }
  checkAccumulatorBound(p.weights.data(), p.columns, p.depth, p.bias, what);
}

void int8LinearReference(const Int8LinearParams& p, const int8_t* x, int8_t* y) {
  for (int64_t m = 0; m < p.rows; ++m) {
    for (int64_t n = 0; n < p.columns; ++n) {
      int64_t acc = p.bias[static_cast<size_t>(n)];
      for (int64_t k = 0; k < p.depth; ++k) {
        acc += (int64_t{x[m * p.depth + k]} - p.input_zero_point) *
               p.weights[static_cast<size_t>(n * p.depth + k)];
      }
      y[m * p.columns + n] = requantizeToInt8(static_cast<int32_t>(acc),
                                              p.multipliers[static_cast<size_t>(n)], p.output_zero_point);
    }
  }
}

Int8LinearFast::Int8LinearFast(Int8LinearParams params) : p_(std::move(params)) {
  weights_.assign(p_.weights.begin(), p_.weights.end());
  folded_bias_.resize(static_cast<size_t>(p_.columns));
  for (int64_t n = 0; n < p_.columns; ++n) {
    int64_t sum = 0;
    for (int64_t k = 0; k < p_.depth; ++k) sum += p_.weights[static_cast<size_t>(n * p_.depth + k)];
    folded_bias_[static_cast<size_t>(n)] =
        static_cast<int32_t>(p_.bias[static_cast<size_t>(n)] - int64_t{p_.input_zero_point} * sum);
  }
}

size_t Int8LinearFast::workspaceBytes() const {
  return static_cast<size_t>(p_.depth) * sizeof(int16_t) + static_cast<size_t>(p_.columns) * sizeof(int32_t);
}

void Int8LinearFast::run(const int8_t* x, int8_t* y, void* workspace) const {
  // The int32 accumulators first: after `depth` int16s they would be misaligned for odd depths
  // (UBSan, tools/sanitize_test.sh). The workspace (threadScratch, operator new) is aligned for them.
  int32_t* acc = static_cast<int32_t*>(workspace);
  int16_t* row = reinterpret_cast<int16_t*>(acc + p_.columns);
  for (int64_t m = 0; m < p_.rows; ++m) {
    std::copy(x + m * p_.depth, x + (m + 1) * p_.depth, row);
    for (int64_t n = 0; n < p_.columns; ++n) {
      const int16_t* w = weights_.data() + n * p_.depth;
      int32_t sum = 0;  // |sum| bounded by validateInt8Linear
      for (int64_t k = 0; k < p_.depth; ++k) sum += int32_t{row[k]} * w[k];
      acc[n] = folded_bias_[static_cast<size_t>(n)] + sum;
    }
    requantizeToInt8PerChannel(acc, 1, p_.columns, 1, p_.multipliers.data(), p_.output_zero_point,
                               y + m * p_.columns);
  }
}

void int8BatchMatMulReference(const Int8BatchMatMulParams& p, const int8_t* a, const int8_t* b, int8_t* y) {
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    const int8_t* ab = a + bi * p.m * p.k;
    const int8_t* bb = b + bi * p.k * p.n;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          acc += (int64_t{ab[i * p.k + k]} - p.zero_point_a) * (int64_t{bb[k * p.n + j]} - p.zero_point_b);
        }
        y[(bi * p.m + i) * p.n + j] =
            requantizeToInt8(saturateToInt32(acc), p.multiplier, p.output_zero_point);
      }
    }
  }
}

void validateInt8BatchMatMul(const Int8BatchMatMulParams& p, const std::string& what) {
  // The centred products are at most 255^2; the int32 accumulator holds K of them.
  constexpr int64_t kMaxCentredProduct = 255 * 255;
  if (p.k * kMaxCentredProduct > kInt32Max) {
    throw ConfigError(what + ": reduction of " + std::to_string(p.k) +
                      " terms could overflow the int32 accumulator; split the MatMul");
  }
}

size_t int8BatchMatMulWorkspaceBytes(const Int8BatchMatMulParams& p) {
  // B transposed [N, K] as int16, one A row as int16, column sums of B and one accumulator row.
  return static_cast<size_t>(p.n * p.k + p.k) * sizeof(int16_t) +
         static_cast<size_t>(2 * p.n) * sizeof(int32_t);
}

void int8BatchMatMulFast(const Int8BatchMatMulParams& p, const int8_t* a, const int8_t* b, int8_t* y,
                         void* workspace) {
  // int32 arrays first, int16 after them: the other order misaligns the int32s for odd sizes.
  int32_t* col_sums = static_cast<int32_t*>(workspace);
  int32_t* acc = col_sums + p.n;
  int16_t* bt = reinterpret_cast<int16_t*>(acc + p.n);
  int16_t* row = bt + p.n * p.k;
  const int64_t constant = p.k * int64_t{p.zero_point_a} * p.zero_point_b;
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    const int8_t* bb = b + bi * p.k * p.n;
    for (int64_t j = 0; j < p.n; ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        bt[j * p.k + k] = bb[k * p.n + j];
        sum += bb[k * p.n + j];
      }
      col_sums[j] = sum;
    }
    for (int64_t i = 0; i < p.m; ++i) {
      const int8_t* ar = a + (bi * p.m + i) * p.k;
      int32_t row_sum = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        row[k] = ar[k];
        row_sum += ar[k];
      }
      for (int64_t j = 0; j < p.n; ++j) {
        const int16_t* br = bt + j * p.k;
        int32_t partial = 0;  // |q_a q_b| <= 2^14 per term: exact for K < 2^17 (checked by validate)
        for (int64_t k = 0; k < p.k; ++k) partial += int32_t{row[k]} * br[k];
        // In int64: the expanded terms are individually larger than the centred result.
        const int64_t dot = int64_t{partial} - int64_t{p.zero_point_b} * row_sum -
                            int64_t{p.zero_point_a} * col_sums[j] + constant;
        acc[j] = saturateToInt32(dot);
      }
      requantizeToInt8Batch(acc, p.n, p.multiplier, p.output_zero_point, y + (bi * p.m + i) * p.n);
    }
  }
}

}  // namespace npuc::quant
