#include "quant/sim/depthwise_groups.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace npuc::quant {

namespace {
constexpr int64_t kGroupBytes = 4;
}

DepthwiseTapGroups DepthwiseTapGroups::of(const std::vector<int64_t>& tap_offsets) {
  DepthwiseTapGroups g;
  g.first_tap.assign(tap_offsets.size(), 0);
  g.lane.assign(tap_offsets.size(), 0);
  std::vector<size_t> order(tap_offsets.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tap_offsets[a] < tap_offsets[b]; });
  for (size_t t : order) {  // a new group at the first tap its predecessor's group cannot hold
    if (g.offsets.empty() || tap_offsets[t] - g.offsets.back() >= kGroupBytes)
      g.offsets.push_back(tap_offsets[t]);
    g.first_tap[t] = static_cast<int>(g.offsets.size() - 1);
    g.lane[t] = static_cast<int>(tap_offsets[t] - g.offsets.back());
  }
  return g;
}

std::vector<int32_t> DepthwiseTapGroups::pack(const int8_t* weights) const {
  std::vector<uint8_t> bytes(offsets.size() * kGroupBytes, 0);
  for (size_t t = 0; t < lane.size(); ++t)
    bytes[static_cast<size_t>(first_tap[t]) * kGroupBytes + static_cast<size_t>(lane[t])] =
        static_cast<uint8_t>(weights[t]);
  std::vector<int32_t> dwords(offsets.size());
  std::memcpy(dwords.data(), bytes.data(), bytes.size());
  return dwords;
}

#ifdef NPUC_DEPTHWISE_VNNI
void depthwiseChannelU8(const uint8_t* plane, const int64_t* group_offsets, const int32_t* group_weights,
                        int64_t groups, int64_t outputs, int32_t bias, const RequantVector& requant,
                        int8_t* out) {
  constexpr int64_t kStep = 64;  // outputs per block: four accumulators of 16
  for (int64_t i0 = 0; i0 < outputs; i0 += kStep) {
    __m512i acc0 = _mm512_set1_epi32(bias), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t k = 0; k < groups; ++k) {
      const uint8_t* p = plane + group_offsets[k] + i0;
      const __m512i w = _mm512_set1_epi32(group_weights[k]);
      acc0 = _mm512_dpbusd_epi32(acc0, _mm512_loadu_si512(p), w);
      acc1 = _mm512_dpbusd_epi32(acc1, _mm512_loadu_si512(p + 1), w);
      acc2 = _mm512_dpbusd_epi32(acc2, _mm512_loadu_si512(p + 2), w);
      acc3 = _mm512_dpbusd_epi32(acc3, _mm512_loadu_si512(p + 3), w);
    }
    // Lane j of acc_r is output i0 + 4j + r: interleave bytes, then byte pairs.
    const __m128i b0 = requant(acc0), b1 = requant(acc1), b2 = requant(acc2), b3 = requant(acc3);
    const __m128i lo01 = _mm_unpacklo_epi8(b0, b1), hi01 = _mm_unpackhi_epi8(b0, b1);
    const __m128i lo23 = _mm_unpacklo_epi8(b2, b3), hi23 = _mm_unpackhi_epi8(b2, b3);
    const __m256i first = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(lo01, lo23)),
                                                  _mm_unpackhi_epi16(lo01, lo23), 1);
    const __m256i second = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(hi01, hi23)),
                                                   _mm_unpackhi_epi16(hi01, hi23), 1);
    const __m512i bytes = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
    if (outputs - i0 >= kStep) {
      _mm512_storeu_si512(out + i0, bytes);
    } else {
      _mm512_mask_storeu_epi8(out + i0, (__mmask64{1} << (outputs - i0)) - 1, bytes);
    }
  }
}
#endif

}  // namespace npuc::quant
