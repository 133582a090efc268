// The depthwise conv's VNNI kernel: per output channel, the taps in groups of four adjacent bytes
// of the split plane (phase_plane.h), so one vpdpbusd adds four taps' u8 x s8 products for 16
// outputs with no shuffle. Output o of the group at offset s reads plane[s + o .. s + o + 3], so
// the dword loaded at plane + s + i + r holds, in lane j, the four bytes output i + 4j + r
// reads: four loads (r = 0..3) cover 64 outputs, whose four accumulators are requantized and
// interleaved back into output order once. Taps three or fewer apart in a sub-plane share a
// group (the 3 taps of a 3x3 kernel row at stride 1, taps kx and kx + 2 at stride 2); a group's
// missing taps have weight 0. Every product and sum is exact in int32 (validateInt8Conv bounds
// the accumulator), so the result equals the reference formula.
#pragma once
#include <cstdint>
#include <vector>

#include "quant/sim/requant_vector.h"

namespace npuc::quant {

struct DepthwiseTapGroups {
  std::vector<int64_t> offsets;  // plane offset of each group's first byte
  std::vector<int> first_tap;    // per tap: its group
  std::vector<int> lane;         // per tap: its byte (0..3) in the group

  // Groups for taps at `tap_offsets` (any order).
  static DepthwiseTapGroups of(const std::vector<int64_t>& tap_offsets);
  size_t size() const { return offsets.size(); }
  // The four-weight dword of each group for one channel's taps (`weights`, one per tap).
  std::vector<int32_t> pack(const int8_t* weights) const;
};

// Bytes read past the plane's last element by the last block (zeroed by the caller).
constexpr int64_t kDepthwiseReadSlack = 128;

#if defined(NPUC_REQUANT_AVX512) && defined(__AVX512VNNI__)
#define NPUC_DEPTHWISE_VNNI 1
// out[o] = requant(bias + sum over groups of the four products) for o < outputs, `plane` holding
// q_x + 128 (padding z_x + 128) and `bias` the channel's bias folded with -(z_x + 128) * sum w.
void depthwiseChannelU8(const uint8_t* plane, const int64_t* group_offsets, const int32_t* group_weights,
                        int64_t groups, int64_t outputs, int32_t bias, const RequantVector& requant,
                        int8_t* out);
#endif

}  // namespace npuc::quant
