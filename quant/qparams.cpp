#include "quant/qparams.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#endif

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {
namespace {

constexpr double kActivationLevels = kActivationQMax - kActivationQMin;  // 255 steps

void checkRange(float min, float max, const char* what) {
  if (std::isfinite(min) && std::isfinite(max) && min <= max) return;
  std::ostringstream msg;
  msg << what << ": invalid quantization range [" << min << ", " << max
      << "] (must be finite with min <= max)";
  throw ConfigError(msg.str());
}

}  // namespace

QuantParams chooseActivationParams(float min, float max, const char* what) {
  checkRange(min, max, what);
  const double lo = std::min(0.0, static_cast<double>(min));
  const double hi = std::max(0.0, static_cast<double>(max));
  double scale = (hi - lo) / kActivationLevels;
  // A scale that is zero or subnormal as a float would make x / scale overflow and the
  // requantization multipliers leave their range; such a range holds only (near) zeros.
  if (!(static_cast<float>(scale) >= std::numeric_limits<float>::min())) scale = kDegenerateRangeScale;
  const float fscale = static_cast<float>(scale);
  // The zero point is where real 0 lands; rounding it (instead of the range ends) keeps 0
  // exact and shifts the represented range by less than half a step.
  const int64_t zp =
      roundHalfAwayClamped(kActivationQMin - lo / fscale, kActivationQMin, kActivationQMax, kActivationQMin);
  return QuantParams{fscale, static_cast<int32_t>(zp)};
}

float symmetricWeightScale(float abs_max) {
  return abs_max / static_cast<float>(kWeightQMax);
}

int8_t quantizeValue(float x, QuantParams p, int32_t qmin, int32_t qmax) {
  const double scaled = static_cast<double>(x) / static_cast<double>(p.scale);
  if (std::isnan(scaled)) return static_cast<int8_t>(std::clamp(p.zero_point, qmin, qmax));
  // Clamp before adding the zero point so huge values cannot overflow the int64 conversion.
  const int64_t r = roundHalfAwayClamped(scaled, -(int64_t{1} << 40), int64_t{1} << 40, 0);
  return static_cast<int8_t>(std::clamp<int64_t>(r + p.zero_point, qmin, qmax));
}

float dequantizeValue(int8_t q, QuantParams p) {
  return p.scale * static_cast<float>(static_cast<int32_t>(q) - p.zero_point);
}

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// quantizeValue on 8 lanes of x (in double, exactly as the scalar function): x / scale, NaN to the
// zero point, |scaled| beyond kSaturated pinned there (it saturates whatever the zero point),
// round half away from zero as trunc +- 1 on the fraction, + zero point, clamp.
inline __m256i quantizeEight(__m256 x, __m512d scale, __m512d zero_point) {
  constexpr double kSaturated = 1024.0;
  const __m512d scaled = _mm512_div_pd(_mm512_cvtps_pd(x), scale);
  const __mmask8 nan = _mm512_cmp_pd_mask(scaled, scaled, _CMP_UNORD_Q);
  const __m512d v =
      _mm512_min_pd(_mm512_max_pd(scaled, _mm512_set1_pd(-kSaturated)), _mm512_set1_pd(kSaturated));
  const __m512d whole = _mm512_roundscale_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512d fraction = _mm512_sub_pd(v, whole);
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d rounded =
      _mm512_mask_add_pd(whole, _mm512_cmp_pd_mask(fraction, _mm512_set1_pd(0.5), _CMP_GE_OQ), whole, one);
  rounded = _mm512_mask_sub_pd(rounded, _mm512_cmp_pd_mask(fraction, _mm512_set1_pd(-0.5), _CMP_LE_OQ),
                               rounded, one);
  __m512d shifted = _mm512_mask_mov_pd(_mm512_add_pd(rounded, zero_point), nan, zero_point);
  shifted =
      _mm512_min_pd(_mm512_max_pd(shifted, _mm512_set1_pd(kActivationQMin)), _mm512_set1_pd(kActivationQMax));
  return _mm512_cvtpd_epi32(shifted);  // integers already: the conversion is exact
}
#endif

void quantizeTensor(const float* x, int64_t n, QuantParams p, int8_t* q) {
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  // Explicit vectors: GCC's own vectorization of the loop below spills its compare masks.
  constexpr int64_t kLanes = 16;
  const __m512d scale = _mm512_set1_pd(p.scale), zero_point = _mm512_set1_pd(p.zero_point);
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m256i low = quantizeEight(_mm512_castps512_ps256(v), scale, zero_point);
    const __m256i high =
        quantizeEight(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)), scale, zero_point);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(both));
  }
#endif
  for (; i < n; ++i) q[i] = quantizeValue(x[i], p);
}

void dequantizeTensor(const int8_t* q, int64_t n, QuantParams p, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = dequantizeValue(q[i], p);
}

}  // namespace npuc::quant
