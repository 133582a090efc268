// NC1HWC2 packing of NPU weights: a row-major [N, C, H, W] tensor becomes [N, C1, H, W, C2] with
// C1 = ceil(C / C2) and the channels past C zero-filled, so the NPU reads C2 channels of one
// pixel as one contiguous vector. C2 is the SoC profile's channel alignment for the op and dtype.
// Element-size generic (int8 weights of INT8 builds, IEEE half bits of FP16 builds, int16 weights of
// w16a16i); int4 weights (w4a16) are packed as int8 first, then two per byte (packInt4).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/lowered_program.h"

namespace npuc::lower {

using Nchw = std::array<int64_t, 4>;

// Calls f(n, c, logical, packed) for every real (unpadded) element of a row-major [N, C, H, W]
// tensor packed with block `c2`: its N and C coordinates, its element index in the row-major
// tensor and in the packed one. Dims must be non-negative and c2 >= 1 (packedBytes checks).
template <typename F>
void forEachPackedElement(const Nchw& dims, int64_t c2, F f) {
  const auto [n, c, h, w] = dims;
  const int64_t c1 = (c + c2 - 1) / c2;
  const int64_t plane = h * w;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t block = 0; block < c1; ++block)  // no division per channel: 1x1 convs have plane 1
      for (int64_t lane = 0, ic = block * c2; lane < c2 && ic < c; ++lane, ++ic) {
        const int64_t src_base = (in * c + ic) * plane;
        const int64_t dst_base = (in * c1 + block) * plane * c2 + lane;
        for (int64_t p = 0; p < plane; ++p) f(in, ic, src_base + p, dst_base + p * c2);
      }
}

// Bytes of the packed form of `dims` with block `c2`.
size_t packedBytes(const Nchw& dims, int64_t c2, size_t elem_bytes);
// Packs `src` (row-major `dims`, `elem_bytes` per element). ShapeError on c2 < 1 or a negative dim.
std::string packNc1hwc2(const void* src, const Nchw& dims, int64_t c2, size_t elem_bytes);
// The inverse: row-major bytes of `dims` from packed bytes (BlobError when `packed` has the wrong
// size for `dims` and `c2`).
std::string unpackNc1hwc2(const std::string& packed, const Nchw& dims, int64_t c2, size_t elem_bytes);

// Bytes per element of a packed weight type (Int4: see packInt4; Float32 / AsGraph: 0).
size_t packedElemBytes(ElemType e);
// Bytes of a task's NWGT entry: the packed elements (int4: ceil(n / 2)) plus, for int4, one u8
// group multiplier each.
uint64_t packedWeightBytes(const PackedWeightRef& ref);

// Int4 storage: element 2k in the low nibble and 2k + 1 in the high nibble of byte k, each in two's
// complement ([-8, 7]; the quantizer uses [-7, 7]); an odd count leaves the last high nibble 0.
// ShapeError naming the element when a value is outside [-8, 7].
std::string packInt4(const int8_t* values, size_t count);
// The inverse (count values, sign-extended); BlobError when `packed` is too short.
std::vector<int8_t> unpackInt4(const std::string& packed, size_t count);

// [rows, cols] -> [cols, rows] of `elem_bytes`-byte elements (a [K, N] weight packs as [N, K]).
std::string transposeElements(const std::string& in, int64_t rows, int64_t cols, size_t elem_bytes);

}  // namespace npuc::lower
