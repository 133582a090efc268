// Integer fully connected layer (Gemm with constant B, MatMul with a constant 2-D B):
//   y[m, n] = requant_n(b_q[n] + sum_k (q_x[m, k] - z_x) * q_w[n, k])
// Weights are stored [N, K] (one row per output channel). As for conv, a reference loop that
// reads like the formula and a fast path with the zero point folded into the bias, which must
// agree to the bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/requant.h"

namespace npuc::quant {

struct Int8LinearParams {
  int64_t rows = 1;             // M (all leading dims of the input flattened)
  int64_t depth = 1;            // K
  int64_t columns = 1;          // N
  std::vector<int8_t> weights;  // [N, K]
  std::vector<int32_t> bias;    // [N]
  int32_t input_zero_point = 0;
  std::vector<FixedPointMultiplier> multipliers;  // [N]
  int32_t output_zero_point = 0;
};

// Throws ConfigError naming `what` on inconsistent sizes or a possible int32 overflow.
void validateInt8Linear(const Int8LinearParams& p, const std::string& what);

void int8LinearReference(const Int8LinearParams& p, const int8_t* x, int8_t* y);

class Int8LinearFast {
 public:
  explicit Int8LinearFast(Int8LinearParams params);
  size_t workspaceBytes() const;
  void run(const int8_t* x, int8_t* y, void* workspace) const;

 private:
  Int8LinearParams p_;
  std::vector<int16_t> weights_;  // widened: int16 x int16 -> int32 is one SIMD multiply-add
  std::vector<int32_t> folded_bias_;
};

// MatMul of two int8 activations, A [batch, M, K] and B [batch, K, N]:
//   acc = sum_k (q_a - z_a)(q_b - z_b),  y = requant(acc, s_a s_b / s_y)
struct Int8BatchMatMulParams {
  int64_t batch = 1, m = 1, k = 1, n = 1;
  int32_t zero_point_a = 0, zero_point_b = 0;
  FixedPointMultiplier multiplier;
  int32_t output_zero_point = 0;
};
void int8BatchMatMulReference(const Int8BatchMatMulParams& p, const int8_t* a, const int8_t* b, int8_t* y);
// Fast form, bit-identical: the zero points are expanded,
//   sum (q_a - z_a)(q_b - z_b) = sum q_a q_b - z_b sum_k q_a - z_a sum_k q_b + K z_a z_b,
// B is transposed once per batch so every dot product runs over contiguous int16 rows.
// Needs int8BatchMatMulWorkspaceBytes(p) bytes of scratch.
// Throws ConfigError naming `what` when K centred products could overflow int32.
void validateInt8BatchMatMul(const Int8BatchMatMulParams& p, const std::string& what);
size_t int8BatchMatMulWorkspaceBytes(const Int8BatchMatMulParams& p);
void int8BatchMatMulFast(const Int8BatchMatMulParams& p, const int8_t* a, const int8_t* b, int8_t* y,
                         void* workspace);

}  // namespace npuc::quant
