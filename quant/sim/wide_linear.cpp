// Wide-accumulator Gemm / MatMul kernels (quant/sim/wide_mac.h): constant weights and two
// activations, each as a reference loop and a fast path over contiguous int32 rows.
#include <algorithm>

#include "common/error.h"
#include "quant/requant_wide.h"
#include "quant/sim/wide_dot.h"
#include "quant/sim/wide_mac.h"

namespace npuc::quant {

void validateWideLinear(const WideLinearParams& p, const std::string& what) {
  const bool ok = static_cast<int64_t>(p.weights.size()) == p.columns * p.depth &&
                  static_cast<int64_t>(p.bias.size()) == p.columns &&
                  static_cast<int64_t>(p.multipliers.size()) == p.columns &&
                  (p.groups.size == 0 || static_cast<int64_t>(p.groups.multipliers.size()) ==
                                             p.columns * p.groups.groupsPer(p.depth));
  if (!ok) throw ConfigError(what + ": wide linear parameters do not match the shapes");
}

void wideLinearReference(const WideLinearParams& p, const int16_t* x, int16_t* y) {
  const int64_t groups_per_channel = p.groups.groupsPer(p.depth);
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t n = 0; n < p.columns; ++n) {
      int64_t acc = p.bias[static_cast<size_t>(n)];
      for (int64_t grp = 0; grp < groups_per_channel; ++grp) {
        const int64_t begin = p.groups.size > 0 ? grp * p.groups.size : 0;
        const int64_t end = p.groups.size > 0 ? std::min(p.depth, begin + p.groups.size) : p.depth;
        int64_t partial = 0;
        for (int64_t k = begin; k < end; ++k)
          partial += (int64_t{x[r * p.depth + k]} - p.input_zero_point) *
                     p.weights[static_cast<size_t>(n * p.depth + k)];
        const int64_t m =
            p.groups.size > 0 ? p.groups.multipliers[static_cast<size_t>(n * groups_per_channel + grp)] : 1;
        acc += m * partial;
      }
      y[r * p.columns + n] =
          requantizeToInt16(acc, p.multipliers[static_cast<size_t>(n)], p.output_zero_point);
    }
  }
}

void wideLinearFast(const WideLinearParams& p, const int16_t* x, int16_t* y) {
  const int64_t groups_per_channel = p.groups.groupsPer(p.depth);
  const std::vector<int32_t> weights(p.weights.begin(), p.weights.end());
  std::vector<int32_t> row(static_cast<size_t>(p.depth));
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t k = 0; k < p.depth; ++k)
      row[static_cast<size_t>(k)] = x[r * p.depth + k] - p.input_zero_point;
    for (int64_t n = 0; n < p.columns; ++n) {
      const int32_t* mults =
          p.groups.size > 0 ? p.groups.multipliers.data() + n * groups_per_channel : nullptr;
      const int64_t acc =
          p.bias[static_cast<size_t>(n)] +
          groupedDotWide(weights.data() + n * p.depth, row.data(), p.depth, p.groups.size, mults);
      y[r * p.columns + n] =
          requantizeToInt16(acc, p.multipliers[static_cast<size_t>(n)], p.output_zero_point);
    }
  }
}

void wideBatchMatMulReference(const WideBatchMatMulParams& p, const int16_t* a, const int16_t* b,
                              int16_t* y) {
  for (int64_t s = 0; s < p.batch; ++s) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          acc += (int64_t{a[(s * p.m + i) * p.k + k]} - p.zero_point_a) *
                 (int64_t{b[(s * p.k + k) * p.n + j]} - p.zero_point_b);
        }
        y[(s * p.m + i) * p.n + j] = requantizeToInt16(acc, p.multiplier, p.output_zero_point);
      }
    }
  }
}

void wideBatchMatMulFast(const WideBatchMatMulParams& p, const int16_t* a, const int16_t* b, int16_t* y) {
  std::vector<int32_t> bt(static_cast<size_t>(p.k * p.n)), row(static_cast<size_t>(p.k));
  for (int64_t s = 0; s < p.batch; ++s) {
    // B transposed once per batch, centred: every dot product reads two contiguous rows.
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t j = 0; j < p.n; ++j)
        bt[static_cast<size_t>(j * p.k + k)] = b[(s * p.k + k) * p.n + j] - p.zero_point_b;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t k = 0; k < p.k; ++k)
        row[static_cast<size_t>(k)] = a[(s * p.m + i) * p.k + k] - p.zero_point_a;
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t acc = dotWide(row.data(), bt.data() + j * p.k, p.k);
        y[(s * p.m + i) * p.n + j] = requantizeToInt16(acc, p.multiplier, p.output_zero_point);
      }
    }
  }
}

}  // namespace npuc::quant
