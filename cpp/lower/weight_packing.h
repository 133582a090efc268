// NC1HWC2 packing of NPU weights: a row-major [N, C, H, W] tensor becomes [N, C1, H, W, C2] with
// C1 = ceil(C / C2) and the channels past C zero-filled, so the NPU reads C2 channels of one
// pixel as one contiguous vector. C2 is the SoC profile's channel alignment for the op and dtype.
// Element-size generic (int8 weights of INT8 builds, IEEE half bits of FP16 builds).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc::lower {

using Nchw = std::array<int64_t, 4>;

// Bytes of the packed form of `dims` with block `c2`.
size_t packedBytes(const Nchw& dims, int64_t c2, size_t elem_bytes);
// Packs `src` (row-major `dims`, `elem_bytes` per element). ShapeError on c2 < 1 or a negative dim.
std::string packNc1hwc2(const void* src, const Nchw& dims, int64_t c2, size_t elem_bytes);
// The inverse: row-major bytes of `dims` from packed bytes (BlobError when `packed` has the wrong
// size for `dims` and `c2`).
std::string unpackNc1hwc2(const std::string& packed, const Nchw& dims, int64_t c2, size_t elem_bytes);

// [rows, cols] -> [cols, rows] of `elem_bytes`-byte elements (a [K, N] weight packs as [N, K]).
std::string transposeElements(const std::string& in, int64_t rows, int64_t cols, size_t elem_bytes);

}  // namespace npuc::lower
