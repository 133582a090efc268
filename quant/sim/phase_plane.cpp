#include "quant/sim/phase_plane.h"

#include <algorithm>

namespace npuc::quant {

namespace {

// Padded rows/columns [lo, hi) that hold input (padded coordinate = input coordinate + pad).
std::pair<int64_t, int64_t> inputSpan(int64_t padded, int64_t in, int64_t pad) {
  return {std::min(pad, padded), std::max(std::min(in + pad, padded), std::min(pad, padded))};
}

}  // namespace

PhasePlane PhasePlane::forConv(const ConvGeometry& g) {
  const int64_t rows = (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1;
  const int64_t cols = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  PhasePlane d;
  d.row_phases = g.stride_h;
  d.col_phases = g.stride_w;
  d.sub_rows = (rows + g.stride_h - 1) / g.stride_h;
  d.sub_cols = (cols + g.stride_w - 1) / g.stride_w;
  return d;
}

std::vector<int64_t> PhasePlane::tapOffsets(const ConvGeometry& g) const {
  std::vector<int64_t> offsets;
  for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      const int64_t r = ky * g.dilation_h, c = kx * g.dilation_w;
      const int64_t sub = (r % row_phases) * col_phases + c % col_phases;
      offsets.push_back(sub * subPlaneElements() + (r / row_phases) * sub_cols + c / col_phases);
    }
  }
  return offsets;
}

template <typename T>
void PhasePlane::fill(const ConvGeometry& g, const int8_t* plane, T pad, T* dst) const {
  std::fill(dst, dst + elements(), pad);
  const auto [row_lo, row_hi] = inputSpan(sub_rows * row_phases, g.in_h, g.pad_top);
  const auto [col_lo, col_hi] = inputSpan(sub_cols * col_phases, g.in_w, g.pad_left);
  for (int64_t r = row_lo; r < row_hi; ++r) {
    const int8_t* src = plane + (r - g.pad_top) * g.in_w - g.pad_left;  // indexed by padded column
    T* row = dst + (r % row_phases) * col_phases * subPlaneElements() + (r / row_phases) * sub_cols;
    if (col_phases == 1) {
      std::copy(src + col_lo, src + col_hi, row + col_lo);
      continue;
    }
    for (int64_t phase = 0; phase < col_phases; ++phase) {
      // Padded columns c = i * col_phases + phase within [col_lo, col_hi).
      T* out = row + phase * subPlaneElements();
      const int64_t first = (std::max<int64_t>(col_lo - phase, 0) + col_phases - 1) / col_phases;
      for (int64_t i = first; i * col_phases + phase < col_hi; ++i) out[i] = src[i * col_phases + phase];
    }
  }
}

void PhasePlane::compact(const ConvGeometry& g, const int8_t* virtual_plane, int8_t* dense) const {
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    std::copy(virtual_plane + oy * sub_cols, virtual_plane + oy * sub_cols + g.out_w, dense + oy * g.out_w);
  }
}

template void PhasePlane::fill<int8_t>(const ConvGeometry&, const int8_t*, int8_t, int8_t*) const;
template void PhasePlane::fill<int16_t>(const ConvGeometry&, const int8_t*, int16_t, int16_t*) const;

}  // namespace npuc::quant
