// The packed integer GEMM under the fast conv: tile[m][j] = sum_k A[m][k] * B[k][j] with A the
// signed int8 weights and B unsigned 8-bit activations (q_x + 128, so that the x86 VNNI
// instruction vpdpbusd, u8 x s8 summed four at a time into int32, applies). Every product and
// sum is exact in int32 (the caller bounds the reduction, validateInt8Conv), so the VNNI kernel
// and the portable loop give the same bits.
//
// Layouts, with the depth k grouped by kGemmDepthStep so one int32 lane holds four k values:
//   packed A  [row block of kGemmRows][k / 4][kGemmRows][4]  (int8, packed once per layer)
//   packed B  [column panel of kGemmCols][k / 4][kGemmCols][4]  (uint8, packed per run)
// Rows past the last row and depth past the last k are zero weights, so whatever B holds there
// adds nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/requant.h"
#include "quant/sim/requant_vector.h"

namespace npuc::quant {

constexpr int64_t kGemmRows = 8;          // output channels per micro tile
constexpr int64_t kGemmCols = 32;         // output positions per micro tile (two 512-bit vectors)
constexpr int64_t kGemmDepthStep = 4;     // k values per int32 lane
constexpr int32_t kUnsignedOffset = 128;  // u8 activation = q_x + 128
// The wide tile (gemmWideTilesToInt8): output channels as vector lanes, positions as rows.
constexpr int64_t kGemmWideRows = 32;  // output channels: four row blocks, two 512-bit vectors
constexpr int64_t kGemmWideCols = 8;   // output positions per wide tile

inline int64_t roundUp(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

struct PackedGemmWeights {
  int64_t rows = 0;
  int64_t depth = 0;         // k before padding
  int64_t depth_groups = 0;  // ceil(k / 4)
  std::vector<int8_t> data;
  const int8_t* rowBlock(int64_t block) const {
    return data.data() + block * depth_groups * kGemmRows * kGemmDepthStep;
  }
};

// Packs row-major weights [rows][depth].
PackedGemmWeights packGemmWeights(const int8_t* weights, int64_t rows, int64_t depth);

// Bytes of packed B for `depth` x `columns`.
size_t packedActivationBytes(int64_t depth, int64_t columns);

// Packs B from `depth` row pointers of `columns` signed int8 values each, adding 128 (the
// rows are an im2col of q_x, or the input planes themselves for a 1x1 stride-1 conv).
void packGemmActivations(const int8_t* const* rows, int64_t depth, int64_t columns, uint8_t* packed);
// The same packing of `columns` outputs laid out `width` to a row, read from runs laid out
// `row_length` >= width to a row (a conv's "virtual" grid, phase_plane.h): column j is byte
// (j / width) * row_length + j % width of each run, so the GEMM skips the virtual columns.
void packGemmActivationsStrided(const int8_t* const* rows, int64_t depth, int64_t columns, int64_t width,
                                int64_t row_length, uint8_t* packed);

// One column panel of the packings above: columns [first, first + n), n <= kGemmCols, into
// `panel` (packedActivationBytes(depth, kGemmCols) bytes). The conv packs a panel just before
// the row blocks use it, so it is still in L1 (packing every panel first spilled them to L3).
void packGemmPanel(const int8_t* const* rows, int64_t depth, int64_t first, int64_t n, uint8_t* panel);
void packGemmPanelStrided(const int8_t* const* rows, int64_t depth, int64_t first, int64_t n, int64_t width,
                          int64_t row_length, uint8_t* panel);

// tile[m * kGemmCols + j] = sum over the depth of a row block x a column panel.
void gemmMicroTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int32_t* tile);

// The same tile requantized on its way out (the conv epilogue, requant_row.h): row m < rows of
// the first `columns` columns becomes requantizeToInt8(tile + channels[m].bias,
// channels[m].multiplier, output_zero_point) at out + m * out_stride. With AVX-512 the int32
// tile never leaves registers.
void gemmMicroTileToInt8(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int64_t rows,
                         int64_t columns, const ChannelRequant* channels, int32_t output_zero_point,
                         int8_t* out, int64_t out_stride);

// Whether gemmWideTilesToInt8 has its own kernel (AVX-512 VNNI); without it, it runs the
// ordinary tiles and saves nothing, so the conv does not choose it.
bool gemmWideTilesFast();

// The tile turned around, for the last column panel of a conv with few output positions: 32
// output channels (the four row blocks from `a_blocks` on, `block_stride` bytes apart) as the
// lanes of two vectors, times the panel's first `columns` <= kGemmCols positions in tiles of 8
// as rows. A 7x7 output leaves 17 positions after one full panel: 24 columns of work instead
// of 32; 14x14 leaves 4: 8 instead of the half tile's 16. Requantized like gemmMicroTileToInt8
// (channel c of the 32 with channels[c]) and written to out + c * out_stride.
void gemmWideTilesToInt8(const int8_t* a_blocks, int64_t block_stride, const uint8_t* b_panel,
                         int64_t depth_groups, int64_t columns, const ChannelRequant* channels,
                         int32_t output_zero_point, int8_t* out, int64_t out_stride);

}  // namespace npuc::quant
