#include "quant/sim/int8_gemm_kernel.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define NPUC_GEMM_VNNI 1
#endif

namespace npuc::quant {

namespace {

constexpr int64_t kGroupBytes = kGemmDepthStep;  // one int32 lane: four 8-bit values
static_assert(kGemmDepthStep == 4, "the packing composes four bytes into one 32-bit lane");
// XOR with 0x80 per byte adds 128 to a signed byte, giving its unsigned 8-bit image.
constexpr uint32_t kSignFlip = 0x80808080u;

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

void packGemmActivations(const int8_t* const* rows, int64_t depth, int64_t columns, uint8_t* packed) {
  const int64_t groups = (depth + kGemmDepthStep - 1) / kGemmDepthStep;
  for (int64_t p0 = 0; p0 < columns; p0 += kGemmCols) {
    const int64_t n = std::min(kGemmCols, columns - p0);
    uint8_t* panel = packed + (p0 / kGemmCols) * groups * kGemmCols * kGroupBytes;
    for (int64_t g = 0; g < groups; ++g) {
      // Depth past the end reads the last row again: its weights are zero.
      const uint8_t* r[kGemmDepthStep];
      for (int64_t i = 0; i < kGemmDepthStep; ++i) {
        r[i] = reinterpret_cast<const uint8_t*>(rows[std::min(g * kGemmDepthStep + i, depth - 1)]) + p0;
      }
      uint32_t lanes[kGemmCols] = {};
      for (int64_t j = 0; j < n; ++j) {
        lanes[j] =
            (uint32_t{r[0][j]} | uint32_t{r[1][j]} << 8 | uint32_t{r[2][j]} << 16 | uint32_t{r[3][j]} << 24) ^
            kSignFlip;
      }
      std::memcpy(panel + g * kGemmCols * kGroupBytes, lanes, sizeof(lanes));
    }
  }
}

#ifdef NPUC_GEMM_VNNI

void gemmMicroTile(const int8_t* a_block, const uint8_t* b_panel, int64_t depth_groups, int32_t* tile) {
  constexpr int kVectors = kGemmCols / 16;  // int32 lanes per 512-bit vector
  __m512i acc[kGemmRows][kVectors];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_si512();
  for (int64_t g = 0; g < depth_groups; ++g) {
    const uint8_t* b = b_panel + g * kGemmCols * kGroupBytes;
    const int8_t* a = a_block + g * kGemmRows * kGroupBytes;
    __m512i bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_loadu_si512(b + v * 64);
    for (int m = 0; m < kGemmRows; ++m) {
      int32_t four_weights;
      std::memcpy(&four_weights, a + m * kGroupBytes, sizeof(four_weights));
      const __m512i w = _mm512_set1_epi32(four_weights);
      for (int v = 0; v < kVectors; ++v) acc[m][v] = _mm512_dpbusd_epi32(acc[m][v], bv[v], w);
    }
  }
  for (int m = 0; m < kGemmRows; ++m)
    for (int v = 0; v < kVectors; ++v) _mm512_storeu_si512(tile + m * kGemmCols + v * 16, acc[m][v]);
}

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

#endif

}  // namespace npuc::quant
