#include "quant/sim/requant_row.h"

#include "quant/sim/requant_vector.h"

namespace npuc::quant {

namespace {

void requantizeRowScalar(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = requantizeToInt8(acc[i] + bias, m, output_zero_point);
}

#ifdef NPUC_REQUANT_AVX512
// One row with the row's constants broadcast once.
inline void requantizeRowAvx512(const int32_t* acc, int64_t n, int32_t bias, const RequantVector& requant,
                                int8_t* out) {
  constexpr int64_t kLanes = 16;
  const __m512i bias_v = _mm512_set1_epi32(bias);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 lanes = n - i >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m128i bytes = requant(_mm512_add_epi32(_mm512_maskz_loadu_epi32(lanes, acc + i), bias_v));
    // Narrow in a register, then store: a masked narrowing store to memory is slow on AMD Zen 4.
    if (lanes == __mmask16{0xFFFF}) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
    } else {
      _mm_mask_storeu_epi8(out + i, lanes, bytes);
    }
  }
}
#endif

}  // namespace

void requantizeRowToInt8(const int32_t* acc, int64_t n, int32_t bias, FixedPointMultiplier m,
                         int32_t output_zero_point, int8_t* out) {
  requantizeRowsToInt8(acc, 1, n, n, &bias, &m, output_zero_point, out, n);
}

void requantizeRowsToInt8(const int32_t* acc, int64_t rows, int64_t n, int64_t acc_stride,
                          const int32_t* biases, const FixedPointMultiplier* multipliers,
                          int32_t output_zero_point, int8_t* out, int64_t out_stride) {
#ifdef NPUC_REQUANT_AVX512
  for (int64_t r = 0; r < rows; ++r) {
    if (multipliers[r].isZero()) {
      requantizeRowScalar(acc + r * acc_stride, n, biases[r], multipliers[r], output_zero_point,
                          out + r * out_stride);
    } else {
      requantizeRowAvx512(acc + r * acc_stride, n, biases[r],
                          RequantVector(multipliers[r], output_zero_point), out + r * out_stride);
    }
  }
#else
  for (int64_t r = 0; r < rows; ++r) {
    requantizeRowScalar(acc + r * acc_stride, n, biases[r], multipliers[r], output_zero_point,
                        out + r * out_stride);
  }
#endif
}

}  // namespace npuc::quant
