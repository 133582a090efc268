#include "quant/sim/half_round.h"

#include "ir/dtype.h"

#if defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>
#define NPUC_HALF_VECTOR 1
#endif

namespace npuc::quant {

void roundFloatsToHalfScalar(const float* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = halfToFloat(floatToHalf(src[i]));
}

void roundFloatsToHalf(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
#ifdef NPUC_HALF_VECTOR
  // vcvtps2ph flushes a subnormal half result to zero when MXCSR.FTZ is set by someone: then the
  // scalar codec, which never flushes.
  constexpr unsigned kFlushToZero = 0x8000;
  if ((_mm_getcsr() & kFlushToZero) == 0) {
    constexpr int64_t kLanes = 16;
    const __m512i sign_bit = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
    const __m512i quiet_nan = _mm512_set1_epi32(0x7fc00000);  // floatToHalf's NaN (0x7e00), widened
    for (; i + kLanes <= n; i += kLanes) {
      const __m512 x = _mm512_loadu_ps(src + i);
      const __m512 rounded =
          _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      // The hardware keeps a NaN's payload; the codec makes every NaN the one quiet NaN.
      const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
      const __m512i canonical =
          _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(x), sign_bit), quiet_nan);
      _mm512_storeu_ps(dst + i, _mm512_mask_mov_ps(rounded, nan, _mm512_castsi512_ps(canonical)));
    }
  }
#endif
  roundFloatsToHalfScalar(src + i, n - i, dst + i);
}

}  // namespace npuc::quant
