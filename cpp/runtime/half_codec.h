// Fast exact IEEE half <-> float for values already rounded to half (the FP16 simulator's), as
// the program runtime stores them in fp16-planned buffers. Equal to floatToHalf / halfToFloat
// (ir/dtype.h) on every such value (tested on all 65536 half bit patterns).
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

#include "ir/dtype.h"

namespace npuc::runtime {

// IEEE half bits of a float the simulator already rounded to half (so exact), and back. Normal
// numbers take the shift-and-rebias path (no rounding needed: the 13 dropped mantissa bits are
// zero) and zeros keep their sign; subnormals, Inf and NaN go through the general conversions of ir/dtype.h.
constexpr uint32_t kHalfMinNormalAsFloat = 0x38800000u;  // 2^-14
constexpr uint32_t kHalfMaxAsFloat = 0x477fe000u;        // 65504
constexpr uint32_t kExponentRebias = 112u << 10;         // (127 - 15) in the half's exponent field

inline uint16_t halfBitsOfRounded(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t abs = x & 0x7fffffffu;
  const uint32_t sign = (x >> 16) & 0x8000u;
  if (abs - kHalfMinNormalAsFloat <= kHalfMaxAsFloat - kHalfMinNormalAsFloat)
    return static_cast<uint16_t>(sign | ((abs >> 13) - kExponentRebias));
  if (abs == 0) return static_cast<uint16_t>(sign);  // zeros: common after ReLU-like ops
  return floatToHalf(f);
}

inline float floatOfHalfBits(uint16_t h) {
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t x = sign;  // a zero keeps only its sign
  if (exponent == 0 || exponent == 0x1fu) {
    if ((h & 0x7fffu) != 0) return halfToFloat(h);  // subnormal, Inf, NaN
  } else {
    x |= ((h & 0x7fffu) + kExponentRebias) << 13;
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// Whole buffers. With F16C, eight lanes at a time (IEEE round-to-nearest-even, exact on these
// values); a block holding a NaN or Inf goes through the scalar path, which keeps ir/dtype.h's NaN
// encoding.
inline void encodeHalfRounded(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs_mask), inf, _CMP_NLT_UQ)) != 0) {
      for (int64_t k = i; k < i + 8; ++k) dst[k] = halfBitsOfRounded(src[k]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) dst[i] = halfBitsOfRounded(src[i]);
}

inline void decodeHalf(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  const __m128i exponent_mask = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent_mask), exponent_mask)) != 0) {
      for (int64_t k = i; k < i + 8; ++k) dst[k] = floatOfHalfBits(src[k]);
      continue;
    }
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = floatOfHalfBits(src[i]);
}

}  // namespace npuc::runtime
