// packGemmActivationsStrided (the conv GEMM packing that skips the virtual columns) equals
// packGemmActivations of the same runs compacted first, for layouts whose panels fit the
// one-permute gather (span <= 64 bytes) and layouts that take the scalar gather.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "quant/sim/int8_gemm_kernel.h"

namespace npuc::quant {
namespace {

TEST(QuantSimStridedPack, EqualsPackingTheCompactedRuns) {
  std::mt19937 gen(77);
  struct Layout {
    int64_t height, width, row_length, depth;
  };
  // 7x7 on a row of 9 (3x3 conv), 28 on 29 (stride 2), width 1 on 40 (span > 64), no virtual
  // columns, depth not a multiple of 4, one column.
  const std::vector<Layout> layouts = {{7, 7, 9, 12},  {5, 28, 29, 9}, {9, 1, 40, 4},
                                       {6, 11, 11, 7}, {3, 5, 17, 5},  {1, 1, 3, 1}};
  for (const Layout& l : layouts) {
    const int64_t columns = l.height * l.width;
    std::vector<std::vector<int8_t>> runs(static_cast<size_t>(l.depth));
    std::vector<std::vector<int8_t>> compact(static_cast<size_t>(l.depth));
    std::vector<const int8_t*> run_ptrs, compact_ptrs;
    std::uniform_int_distribution<int> byte(-128, 127);
    for (size_t i = 0; i < runs.size(); ++i) {
      runs[i].resize(static_cast<size_t>(l.height * l.row_length));
      for (int8_t& v : runs[i]) v = static_cast<int8_t>(byte(gen));
      for (int64_t j = 0; j < columns; ++j)
        compact[i].push_back(runs[i][static_cast<size_t>((j / l.width) * l.row_length + j % l.width)]);
      run_ptrs.push_back(runs[i].data());
      compact_ptrs.push_back(compact[i].data());
    }
    const size_t bytes = packedActivationBytes(l.depth, columns);
    std::vector<uint8_t> want(bytes, 0xAB), got(bytes, 0xAB);
    packGemmActivations(compact_ptrs.data(), l.depth, columns, want.data());
    packGemmActivationsStrided(run_ptrs.data(), l.depth, columns, l.width, l.row_length, got.data());
    // Bytes of columns past `columns` in the last panel are never read: compare used lanes only.
    const int64_t groups = (l.depth + kGemmDepthStep - 1) / kGemmDepthStep;
    for (int64_t j = 0; j < columns; ++j) {
      for (int64_t g = 0; g < groups; ++g) {
        const size_t at = static_cast<size_t>(((j / kGemmCols) * groups + g) * kGemmCols * kGemmDepthStep +
                                              (j % kGemmCols) * kGemmDepthStep);
        for (int64_t b = 0; b < kGemmDepthStep; ++b)
          ASSERT_EQ(got[at + static_cast<size_t>(b)], want[at + static_cast<size_t>(b)])
              << "width " << l.width << " row " << l.row_length << " column " << j << " group " << g;
      }
    }
  }
}

}  // namespace
}  // namespace npuc::quant
