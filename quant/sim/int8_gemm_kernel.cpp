#include "quant/sim/int8_gemm_kernel.h"

#include <algorithm>
#include <cstring>

#include "quant/sim/requant_row.h"
#include "quant/sim/requant_vector.h"

#if defined(__AVX512VNNI__) || defined(__AVX512VBMI__)
#include <immintrin.h>
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define NPUC_GEMM_VNNI 1
#endif

namespace npuc::quant {

namespace {

constexpr int64_t kGroupBytes = kGemmDepthStep;  // one int32 lane: four 8-bit values
static_assert(kGemmDepthStep == 4, "the packing composes four bytes into one 32-bit lane");
// XOR with 0x80 per byte adds 128 to a signed byte, giving its unsigned 8-bit image.
constexpr uint32_t kSignFlip = 0x80808080u;

// requantizeRowsToInt8 of up to kGemmRows rows of a kGemmCols-wide tile (the portable epilogue
// and the zero-multiplier rows).
void requantizeTileRows(const int32_t* tile, int64_t rows, int64_t columns, const ChannelRequant* channels,
                        int32_t output_zero_point, int8_t* out, int64_t out_stride) {
  int32_t biases[kGemmRows];
  FixedPointMultiplier multipliers[kGemmRows];
  for (int64_t m = 0; m < rows; ++m) {
    biases[m] = channels[m].bias;
    multipliers[m] = channels[m].multiplier;
  }
  requantizeRowsToInt8(tile, rows, columns, kGemmCols, biases, multipliers, output_zero_point, out,
                       out_stride);
}

}  // namespace

namespace {

// A permute index reaches 64 bytes: panels whose columns span more take the scalar gather.
constexpr int64_t kPermuteSpan = 64;

// Four rows' bytes at offsets[j] (j < n) as 32 four-byte lanes, +128: the portable packing of
// one depth group, and the AVX-512 one's fallback for panels spanning more than kPermuteSpan.
void interleaveFourRowsScalar(const uint8_t* const* r, const int64_t* offsets, int64_t n, uint8_t* out) {
  uint32_t lanes[kGemmCols] = {};
  for (int64_t j = 0; j < n; ++j) {
    const int64_t o = offsets[j];
    lanes[j] =
        (uint32_t{r[0][o]} | uint32_t{r[1][o]} << 8 | uint32_t{r[2][o]} << 16 | uint32_t{r[3][o]} << 24) ^
        kSignFlip;
  }
  std::memcpy(out, lanes, sizeof(lanes));
}

// One panel of `depth` rows, columns at `start` + offsets[j] of each row: depth past the end
// reads the last row again (its weights are zero).
void packPanelScalar(const int8_t* const* rows, int64_t depth, int64_t start, const int64_t* offsets,
                     int64_t n, uint8_t* panel) {
  const int64_t groups = (depth + kGemmDepthStep - 1) / kGemmDepthStep;
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* r[kGemmDepthStep];
    for (int64_t i = 0; i < kGemmDepthStep; ++i) {
      r[i] = reinterpret_cast<const uint8_t*>(rows[std::min(g * kGemmDepthStep + i, depth - 1)]) + start;
    }
    interleaveFourRowsScalar(r, offsets, n, panel + g * kGemmCols * kGroupBytes);
  }
}

#if defined(__AVX512VBMI__)
// The byte permute index of packPanelPermuted: 16-bit word w of 128-bit lane L holds column
// 4L + w (w < 4) or 16 + 4L + w - 4, its low byte from the first row of a pair and its high
// byte from the second (index bit 6), so that unpacklo_epi16 of the pairs 0|1 and 2|3 yields
// the four-byte lanes of columns 0-15 in order and unpackhi_epi16 those of columns 16-31.
// Columns past n repeat offset 0; their lanes are never used.
struct PairIndex {
  alignas(64) uint8_t bytes[kPermuteSpan];
};
constexpr PairIndex pairIndex(const int64_t* offsets, int64_t n) {
  constexpr int kLanes = 4, kWordsPerLane = 8, kHalfWords = 4, kSecondRow = 64;
  PairIndex index{};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int w = 0; w < kWordsPerLane; ++w) {
      const int column = w < kHalfWords ? kHalfWords * lane + w : 16 + kHalfWords * lane + (w - kHalfWords);
      const auto offset = static_cast<uint8_t>(column < n ? offsets[column] : 0);
      index.bytes[(lane * kWordsPerLane + w) * 2] = offset;
      index.bytes[(lane * kWordsPerLane + w) * 2 + 1] = static_cast<uint8_t>(offset | kSecondRow);
    }
  }
  return index;
}
// Contiguous columns (packGemmPanel), built once: a pointwise conv's panel may be only a few
// depth groups, too few to pay for building the index per panel.
constexpr int64_t kColumnIndices[kGemmCols] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                               11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                               22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
constexpr PairIndex kContiguousPairIndex = pairIndex(kColumnIndices, kGemmCols);

// packPanelScalar for columns within `span` <= 64 bytes of `start`: per depth group, four
// masked loads, one two-source byte permute per pair of rows (gathering and pairing at once),
// two 16-bit unpacks and the +128.
void packPanelPermuted(const int8_t* const* rows, int64_t depth, int64_t start, int64_t span,
                       const uint8_t* index, uint8_t* panel) {
  const __mmask64 m = span >= kPermuteSpan ? ~__mmask64{0} : (__mmask64{1} << span) - 1;
  const __m512i idx = _mm512_load_si512(index);
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(kSignFlip));
  auto row = [&](int64_t k) { return _mm512_maskz_loadu_epi8(m, rows[std::min(k, depth - 1)] + start); };
  const int64_t groups = (depth + kGemmDepthStep - 1) / kGemmDepthStep;
  for (int64_t g = 0; g < groups; ++g, panel += kGemmCols * kGroupBytes) {
    const int64_t k = g * kGemmDepthStep;
    const __m512i rows01 = _mm512_permutex2var_epi8(row(k), idx, row(k + 1));
    const __m512i rows23 = _mm512_permutex2var_epi8(row(k + 2), idx, row(k + 3));
    _mm512_storeu_si512(panel, _mm512_xor_si512(_mm512_unpacklo_epi16(rows01, rows23), flip));
    _mm512_storeu_si512(panel + 64, _mm512_xor_si512(_mm512_unpackhi_epi16(rows01, rows23), flip));
  }
}
#endif

// Columns [0, n) of each row at `start` + offsets[j].
void packPanel(const int8_t* const* rows, int64_t depth, int64_t start, const int64_t* offsets, int64_t n,
               uint8_t* panel) {
#if defined(__AVX512VBMI__)
  const int64_t span = offsets[n - 1] + 1;
  if (span <= kPermuteSpan) {
    const PairIndex index = pairIndex(offsets, n);
    packPanelPermuted(rows, depth, start, span, index.bytes, panel);
    return;
  }
#endif
  packPanelScalar(rows, depth, start, offsets, n, panel);
}

}  // namespace

PackedGemmWeights packGemmWeights(const int8_t* weights, int64_t rows, int64_t depth) {
  PackedGemmWeights p;
  p.rows = rows;
  p.depth = depth;
  p.depth_groups = (depth + kGemmDepthStep - 1) / kGemmDepthStep;
  const int64_t blocks = (rows + kGemmRows - 1) / kGemmRows;
  p.data.assign(static_cast<size_t>(blocks * p.depth_groups * kGemmRows * kGroupBytes), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int8_t* block = p.data.data() + (r / kGemmRows) * p.depth_groups * kGemmRows * kGroupBytes;
    for (int64_t k = 0; k < depth; ++k) {
      block[((k / kGemmDepthStep) * kGemmRows + r % kGemmRows) * kGroupBytes + k % kGemmDepthStep] =
          weights[r * depth + k];
    }
  }
  return p;
}

size_t packedActivationBytes(int64_t depth, int64_t columns) {
  const int64_t groups = (depth + kGemmDepthStep - 1) / kGemmDepthStep;
  return static_cast<size_t>(roundUp(columns, kGemmCols) * groups * kGroupBytes);
}

void packGemmPanel(const int8_t* const* rows, int64_t depth, int64_t first, int64_t n, uint8_t* panel) {
#if defined(__AVX512VBMI__)
  packPanelPermuted(rows, depth, first, n, kContiguousPairIndex.bytes, panel);
#else
  int64_t offsets[kGemmCols] = {};
  for (int64_t j = 0; j < n; ++j) offsets[j] = j;
  packPanelScalar(rows, depth, first, offsets, n, panel);
#endif
}

void packGemmPanelStrided(const int8_t* const* rows, int64_t depth, int64_t first, int64_t n, int64_t width,
                          int64_t row_length, uint8_t* panel) {
  // Column j sits at (j / width) * row_length + j % width of each run: walked incrementally (one
  // division per panel, not per column).
  int64_t offsets[kGemmCols] = {};
  int64_t run_row = first / width, run_col = first % width;
  const int64_t start = run_row * row_length + run_col;
  for (int64_t j = 0; j < n; ++j) {
    offsets[j] = run_row * row_length + run_col - start;
    if (++run_col == width) run_col = 0, ++run_row;
  }
  packPanel(rows, depth, start, offsets, n, panel);
}

void packGemmActivations(const int8_t* const* rows, int64_t depth, int64_t columns, uint8_t* packed) {
  const size_t panel_bytes = packedActivationBytes(depth, kGemmCols);
  for (int64_t p0 = 0; p0 < columns; p0 += kGemmCols) {
    packGemmPanel(rows, depth, p0, std::min(kGemmCols, columns - p0),
                  packed + (p0 / kGemmCols) * panel_bytes);
  }
}

void packGemmActivationsStrided(const int8_t* const* rows, int64_t depth, int64_t columns, int64_t width,
                                int64_t row_length, uint8_t* packed) {
  const size_t panel_bytes = packedActivationBytes(depth, kGemmCols);
  for (int64_t p0 = 0; p0 < columns; p0 += kGemmCols) {
    packGemmPanelStrided(rows, depth, p0, std::min(kGemmCols, columns - p0), width, row_length,
                         packed + (p0 / kGemmCols) * panel_bytes);
  }
}

#ifdef NPUC_GEMM_VNNI

// Four int8 weights as one int32 lane (memcpy: the bytes are int8 storage; one load in the end).
inline int32_t lane(const int8_t* four) {
  int32_t v;
  std::memcpy(&v, four, sizeof(v));
  return v;
}

// The 8 x 32 tile in sixteen named accumulators (8 rows x 2 vectors of 16 columns): written out
// rather than an array so the compiler keeps them all in registers (with an array GCC copied and
// spilled). Returns them as rows[m][half].
struct TileRegisters {
  __m512i rows[kGemmRows][2];
};

// The weights of a deep layer (1-2 MiB for a 3x3 conv at 7x7 or 14x14) come from memory on
// every run, and the hardware prefetcher alone leaves the tile waiting on them (resnet18's
// convs run in sequence: 5227 -> 4680 us). 3 KiB ahead is 96 depth groups, about 800 cycles of
// the tile: measured against 1, 2 and 4 KiB on a Zen 5 host, where it was best.
constexpr int64_t kWeightPrefetchBytes = 3072;
inline void prefetchWeights(const int8_t* a) {
  _mm_prefetch(reinterpret_cast<const char*>(a) + kWeightPrefetchBytes, _MM_HINT_T0);
}
inline TileRegisters multiplyTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups) {
  static_assert(kGemmRows == 8 && kGemmCols == 32, "the VNNI tile is written out for 8 x 32");
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
          c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const int8_t* a = a_block;  // four int8 weights per int32 lane, kGemmRows lanes per depth group
  const uint8_t* b = b_panel;
  for (int64_t g = 0; g < depth_groups; ++g, a += kGemmRows * kGroupBytes, b += kGemmCols * kGroupBytes) {
    prefetchWeights(a);
    const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
#define NPUC_VNNI_ROW(m, lo, hi)                                    \
  {                                                                 \
    const __m512i w = _mm512_set1_epi32(lane(a + (m)*kGroupBytes)); \
    lo = _mm512_dpbusd_epi32(lo, b0, w);                            \
    hi = _mm512_dpbusd_epi32(hi, b1, w);                            \
  }
    NPUC_VNNI_ROW(0, c00, c01)
    NPUC_VNNI_ROW(1, c10, c11)
    NPUC_VNNI_ROW(2, c20, c21)
    NPUC_VNNI_ROW(3, c30, c31)
    NPUC_VNNI_ROW(4, c40, c41)
    NPUC_VNNI_ROW(5, c50, c51)
    NPUC_VNNI_ROW(6, c60, c61)
    NPUC_VNNI_ROW(7, c70, c71)
#undef NPUC_VNNI_ROW
  }
  return TileRegisters{
      {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}}};
}

// The left half of the tile (a panel's first 16 columns, the first 64 bytes of each packed depth
// group): a panel with at most 16 real columns (the last one of a 14x14 or 28x28 output) costs
// half the instructions. rows[m][1] stays zero.
inline TileRegisters multiplyHalfTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups) {
  __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  const int8_t* a = a_block;
  const uint8_t* b = b_panel;
  for (int64_t g = 0; g < depth_groups; ++g, a += kGemmRows * kGroupBytes, b += kGemmCols * kGroupBytes) {
    prefetchWeights(a);
    const __m512i b0 = _mm512_loadu_si512(b);
#define NPUC_VNNI_HALF_ROW(m, c) c = _mm512_dpbusd_epi32(c, b0, _mm512_set1_epi32(lane(a + (m)*kGroupBytes)));
    NPUC_VNNI_HALF_ROW(0, c0)
    NPUC_VNNI_HALF_ROW(1, c1)
    NPUC_VNNI_HALF_ROW(2, c2)
    NPUC_VNNI_HALF_ROW(3, c3)
    NPUC_VNNI_HALF_ROW(4, c4)
    NPUC_VNNI_HALF_ROW(5, c5)
    NPUC_VNNI_HALF_ROW(6, c6)
    NPUC_VNNI_HALF_ROW(7, c7)
#undef NPUC_VNNI_HALF_ROW
  }
  const __m512i z = _mm512_setzero_si512();
  return TileRegisters{{{c0, z}, {c1, z}, {c2, z}, {c3, z}, {c4, z}, {c5, z}, {c6, z}, {c7, z}}};
}

void gemmMicroTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int32_t* tile) {
  const TileRegisters t = multiplyTile(a_block, b_panel, depth_groups);
  for (int m = 0; m < kGemmRows; ++m) {
    _mm512_storeu_si512(tile + m * kGemmCols, t.rows[m][0]);
    _mm512_storeu_si512(tile + m * kGemmCols + 16, t.rows[m][1]);
  }
}

void gemmMicroTileToInt8(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int64_t rows,
                         int64_t columns, const ChannelRequant* channels, int32_t output_zero_point,
                         int8_t* out, int64_t out_stride) {
#ifdef NPUC_REQUANT_AVX512
  const bool half = columns <= kGemmCols / 2;
  const TileRegisters t =
      half ? multiplyHalfTile(a_block, b_panel, depth_groups) : multiplyTile(a_block, b_panel, depth_groups);
  const __mmask32 lanes = columns >= kGemmCols ? ~__mmask32{0} : (__mmask32{1} << columns) - 1;
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* row = out + m * out_stride;
    if (channels[m].multiplier.isZero()) {  // every output is the zero point (scalar reference)
      alignas(64) int32_t acc[kGemmCols];
      _mm512_store_si512(acc, t.rows[m][0]);
      _mm512_store_si512(acc + 16, t.rows[m][1]);
      requantizeTileRows(acc, 1, columns, channels + m, output_zero_point, row, out_stride);
      continue;
    }
    const RequantVector requant(channels[m], output_zero_point);
    const __m512i bias = _mm512_set1_epi32(channels[m].bias);
    const __m128i first = requant(_mm512_add_epi32(t.rows[m][0], bias));
    if (half) {
      _mm_mask_storeu_epi8(row, static_cast<__mmask16>(lanes), first);
      continue;
    }
    const __m256i bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(first),
                                                  requant(_mm512_add_epi32(t.rows[m][1], bias)), 1);
    if (lanes == ~__mmask32{0}) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), bytes);
    } else {
      _mm256_mask_storeu_epi8(row, lanes, bytes);
    }
  }
#else
  alignas(64) int32_t tile[kGemmRows * kGemmCols];
  gemmMicroTile(a_block, b_panel, depth_groups, tile);
  requantizeTileRows(tile, rows, columns, channels, output_zero_point, out, out_stride);
#endif
}

#ifdef NPUC_REQUANT_AVX512
#define NPUC_GEMM_WIDE 1

// The wide tile's 16 accumulators: rows[r][h] holds output channels 16h .. 16h + 15 (lane i is
// channel 16h + i) at the tile's position r.
struct WideTileRegisters {
  __m512i rows[kGemmWideCols][2];
};

// Per depth group: the 32 channels' four weights are 32 bytes of each of the four row blocks
// (two loads per vector), and each position's four activations one broadcast dword of the
// panel, so the weights are the s8 operand and the activations the u8 one, as in the row tile.
inline WideTileRegisters multiplyWideTile(const int8_t* a_blocks, int64_t block_stride,
                                          const uint8_t* b_panel, int64_t depth_groups) {
  static_assert(kGemmWideRows == 4 * kGemmRows && kGemmWideCols == 8,
                "the wide tile is written out for 32 x 8");
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
          c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const int8_t* a = a_blocks;
  const uint8_t* b = b_panel;
  auto blockPair = [block_stride](const int8_t* first) {
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(first))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(first + block_stride)), 1);
  };
  for (int64_t g = 0; g < depth_groups; ++g, a += kGemmRows * kGroupBytes, b += kGemmCols * kGroupBytes) {
    for (int block = 0; block < 4; ++block) prefetchWeights(a + block * block_stride);
    const __m512i w0 = blockPair(a), w1 = blockPair(a + 2 * block_stride);
#define NPUC_VNNI_WIDE_ROW(r, lo, hi)                                                                \
  {                                                                                                  \
    const __m512i x = _mm512_set1_epi32(lane(reinterpret_cast<const int8_t*>(b) + (r)*kGroupBytes)); \
    lo = _mm512_dpbusd_epi32(lo, x, w0);                                                             \
    hi = _mm512_dpbusd_epi32(hi, x, w1);                                                             \
  }
    NPUC_VNNI_WIDE_ROW(0, c00, c01)
    NPUC_VNNI_WIDE_ROW(1, c10, c11)
    NPUC_VNNI_WIDE_ROW(2, c20, c21)
    NPUC_VNNI_WIDE_ROW(3, c30, c31)
    NPUC_VNNI_WIDE_ROW(4, c40, c41)
    NPUC_VNNI_WIDE_ROW(5, c50, c51)
    NPUC_VNNI_WIDE_ROW(6, c60, c61)
    NPUC_VNNI_WIDE_ROW(7, c70, c71)
#undef NPUC_VNNI_WIDE_ROW
  }
  return WideTileRegisters{
      {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}}};
}

#endif

#else

void gemmMicroTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int32_t* tile) {
  for (int64_t i = 0; i < kGemmRows * kGemmCols; ++i) tile[i] = 0;
  for (int64_t g = 0; g < depth_groups; ++g) {
    const uint8_t* b = b_panel + g * kGemmCols * kGroupBytes;
    const int8_t* a = a_block + g * kGemmRows * kGroupBytes;
    for (int64_t m = 0; m < kGemmRows; ++m) {
      const int32_t w0 = a[m * 4], w1 = a[m * 4 + 1], w2 = a[m * 4 + 2], w3 = a[m * 4 + 3];
      int32_t* t = tile + m * kGemmCols;
      for (int64_t j = 0; j < kGemmCols; ++j) {
        t[j] += w0 * b[j * 4] + w1 * b[j * 4 + 1] + w2 * b[j * 4 + 2] + w3 * b[j * 4 + 3];
      }
    }
  }
}

void gemmMicroTileToInt8(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int64_t rows,
                         int64_t columns, const ChannelRequant* channels, int32_t output_zero_point,
                         int8_t* out, int64_t out_stride) {
  int32_t tile[kGemmRows * kGemmCols];
  gemmMicroTile(a_block, b_panel, depth_groups, tile);
  requantizeTileRows(tile, rows, columns, channels, output_zero_point, out, out_stride);
}

#endif

bool gemmWideTilesFast() {
#ifdef NPUC_GEMM_WIDE
  return true;
#else
  return false;
#endif
}

void gemmWideTilesToInt8(const int8_t* a_blocks, int64_t block_stride, const uint8_t* b_panel,
                         int64_t depth_groups, int64_t columns, const ChannelRequant* channels,
                         int32_t output_zero_point, int8_t* out, int64_t out_stride) {
  const bool any_zero = std::any_of(channels, channels + kGemmWideRows,
                                    [](const ChannelRequant& c) { return c.multiplier.isZero(); });
#ifdef NPUC_GEMM_WIDE
  if (!any_zero) {
    const RequantVector low(channels, output_zero_point), high(channels + 16, output_zero_point);
    alignas(64) int32_t biases[kGemmWideRows];
    for (int64_t c = 0; c < kGemmWideRows; ++c) biases[c] = channels[c].bias;
    const __m512i bias_low = _mm512_load_si512(biases), bias_high = _mm512_load_si512(biases + 16);
    for (int64_t j0 = 0; j0 < columns; j0 += kGemmWideCols) {
      const WideTileRegisters t =
          multiplyWideTile(a_blocks, block_stride, b_panel + j0 * kGroupBytes, depth_groups);
      // Requantized bytes [position][channel], then stored transposed: channel c's positions
      // are contiguous in its output row.
      alignas(64) int8_t bytes[kGemmWideCols][kGemmWideRows];
      for (int r = 0; r < kGemmWideCols; ++r) {
        _mm_store_si128(reinterpret_cast<__m128i*>(bytes[r]), low(_mm512_add_epi32(t.rows[r][0], bias_low)));
        _mm_store_si128(reinterpret_cast<__m128i*>(bytes[r] + 16),
                        high(_mm512_add_epi32(t.rows[r][1], bias_high)));
      }
      const int64_t n = std::min(kGemmWideCols, columns - j0);
      for (int64_t c = 0; c < kGemmWideRows; ++c) {
        int8_t* row = out + c * out_stride + j0;
        for (int64_t r = 0; r < n; ++r) row[r] = bytes[r][c];
      }
    }
    return;
  }
#endif
  (void)any_zero;
  // The ordinary row tiles over the same four row blocks.
  for (int64_t block = 0; block < kGemmWideRows / kGemmRows; ++block) {
    const int64_t first = block * kGemmRows;
    gemmMicroTileToInt8(a_blocks + block * block_stride, b_panel, depth_groups, kGemmRows, columns,
                        channels + first, output_zero_point, out + first * out_stride, out_stride);
  }
}

}  // namespace npuc::quant
