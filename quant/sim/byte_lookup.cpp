#include "quant/sim/byte_lookup.h"

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define NPUC_LOOKUP_VBMI 1
#endif

namespace npuc::quant {

void lookupBytesScalar(const int8_t* table, const int8_t* in, int64_t n, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = table[static_cast<uint8_t>(in[i])];
}

void lookupBytes(const int8_t* table, const int8_t* in, int64_t n, int8_t* out) {
#ifdef NPUC_LOOKUP_VBMI
  // vpermi2b indexes 128 bytes by an index byte's low 7 bits: one permute per table half, the
  // index byte's top bit picks the half.
  constexpr int64_t kLanes = 64;
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask64 lanes = n - i >= kLanes ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    const __m512i idx = _mm512_maskz_loadu_epi8(lanes, in + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1);
    const __m512i high = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_mask_storeu_epi8(out + i, lanes, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high));
  }
#else
  lookupBytesScalar(table, in, n, out);
#endif
}

}  // namespace npuc::quant
