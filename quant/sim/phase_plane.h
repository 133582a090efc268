// The padded, phase-split copy of a conv input plane that lets both fast conv paths read every
// tap as ONE contiguous run, at any stride and dilation, without im2col.
//
// Padded element (r, c) (input row r - pad_top, column c - pad_left; padding holds z_x) lives in
// sub-plane (r % stride_h, c % stride_w) at (r / stride_h, c / stride_w). Output (oy, ox) of tap
// (ky, kx) reads padded (oy * s_h + ky * d_h, ox * s_w + kx * d_w), i.e. sub-plane
// (ky*d_h % s_h, kx*d_w % s_w) at (oy + ky*d_h / s_h, ox + kx*d_w / s_w). With outputs laid out
// on the sub-plane's row length ("virtual" columns ox >= out_w are computed and thrown away), the
// run of tap t over all outputs starts at tapOffsets()[t] and is contiguous. Each sub-plane has
// one spare row so the last virtual outputs stay inside the buffer.
#pragma once
#include <cstdint>
#include <vector>

#include "quant/sim/int8_conv.h"

namespace npuc::quant {

struct PhasePlane {
  int64_t row_phases = 1, col_phases = 1, sub_rows = 0, sub_cols = 0;

  static PhasePlane forConv(const ConvGeometry& g);
  int64_t subPlaneElements() const { return (sub_rows + 1) * sub_cols; }
  int64_t elements() const { return row_phases * col_phases * subPlaneElements(); }
  // Outputs on the virtual grid: out_h rows of sub_cols.
  int64_t virtualOutputs(const ConvGeometry& g) const { return g.out_h * sub_cols; }
  // Start of each tap's run (index ky * kernel_w + kx) inside one split plane.
  std::vector<int64_t> tapOffsets(const ConvGeometry& g) const;
  // Writes the split plane of one input channel (`plane`, in_h x in_w) into dst.
  template <typename T>
  void fill(const ConvGeometry& g, const int8_t* plane, T pad, T* dst) const;
  // Copies the real outputs (ox < out_w) of a virtual output plane to a dense out_h x out_w one.
  void compact(const ConvGeometry& g, const int8_t* virtual_plane, int8_t* dense) const;
};

extern template void PhasePlane::fill<int8_t>(const ConvGeometry&, const int8_t*, int8_t, int8_t*) const;

}  // namespace npuc::quant
