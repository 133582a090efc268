#include "quant/sim/int8_conv.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/sim/requant_row.h"

namespace npuc::quant {

namespace {

// Largest |q_x - z_x| * |q_w| of one product term.
constexpr int64_t kMaxProductMagnitude = 255 * kWeightQMax;
// Workspace pieces start on cache-line boundaries (and so on 512-bit vector boundaries).
constexpr size_t kWorkspaceAlign = 64;

size_t alignUp(size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// The output positions o in [0, out) whose input coordinate o * stride + offset lies in [0, in):
// one interval, since the coordinate grows with o.
std::pair<int64_t, int64_t> inBoundsRange(int64_t out, int64_t in, int64_t stride, int64_t offset) {
  int64_t lo = 0, hi = out;
  while (lo < hi && lo * stride + offset < 0) ++lo;
  while (hi > lo && (hi - 1) * stride + offset >= in) --hi;
  return {lo, hi};
}

int64_t inputIndex(const ConvGeometry& g, int64_t n, int64_t c, int64_t y, int64_t x) {
  return ((n * g.in_channels + c) * g.in_h + y) * g.in_w + x;
}

}  // namespace

void validateInt8Conv(const Int8ConvParams& p, const std::string& what) {
  const ConvGeometry& g = p.geometry;
  if (g.groups <= 0 || g.in_channels % g.groups || g.out_channels % g.groups) {
    throw ConfigError(what + ": channels (" + std::to_string(g.in_channels) + " in, " +
                      std::to_string(g.out_channels) + " out) are not divisible by group " +
                      std::to_string(g.groups));
  }
  const size_t cout = static_cast<size_t>(g.out_channels);
  if (p.weights.size() != cout * static_cast<size_t>(g.reduction()) || p.bias.size() != cout ||
      p.multipliers.size() != cout) {
    throw ConfigError(what + ": int8 conv weights/bias/multipliers do not match the geometry");
  }
  int64_t max_bias = 0;
  for (int32_t b : p.bias) max_bias = std::max<int64_t>(max_bias, std::llabs(b));
  // The folded bias b - z_x * sum q_w adds at most 128 * reduction * 127 on top.
  const int64_t worst = g.reduction() * kMaxProductMagnitude + max_bias + 128 * g.reduction() * kWeightQMax;
  if (worst > kInt32Max) {
    throw ConfigError(what + ": reduction of " + std::to_string(g.reduction()) +
                      " terms could overflow the int32 accumulator; split the layer");
  }
}

void int8ConvReference(const Int8ConvParams& p, const int8_t* x, int8_t* y) {
  const ConvGeometry& g = p.geometry;
  const int64_t cin_g = g.inPerGroup(), cout_g = g.outPerGroup();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      const int64_t group = oc / cout_g;
      const int8_t* w = p.weights.data() + oc * g.reduction();
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          int64_t acc = p.bias[static_cast<size_t>(oc)];
          for (int64_t ic = 0; ic < cin_g; ++ic) {
            for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
              const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
              if (iy < 0 || iy >= g.in_h) continue;  // padding: real 0 contributes nothing
              for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
                const int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
                if (ix < 0 || ix >= g.in_w) continue;
                const int64_t qx = x[inputIndex(g, n, group * cin_g + ic, iy, ix)];
                acc += (qx - p.input_zero_point) * w[(ic * g.kernel_h + ky) * g.kernel_w + kx];
              }
            }
          }
          const int64_t out = ((n * g.out_channels + oc) * g.out_h + oy) * g.out_w + ox;
          y[out] = requantizeToInt8(static_cast<int32_t>(acc), p.multipliers[static_cast<size_t>(oc)],
                                    p.output_zero_point);
        }
      }
    }
  }
}

Int8ConvFast::Int8ConvFast(Int8ConvParams params) : p_(std::move(params)) {
  const ConvGeometry& g = p_.geometry;
  const int64_t k = g.reduction();
  const int64_t z = direct() ? p_.input_zero_point : p_.input_zero_point + kUnsignedOffset;
  folded_bias_.resize(static_cast<size_t>(g.out_channels));
  for (int64_t oc = 0; oc < g.out_channels; ++oc) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += p_.weights[static_cast<size_t>(oc * k + i)];
    folded_bias_[static_cast<size_t>(oc)] = static_cast<int32_t>(p_.bias[static_cast<size_t>(oc)] - z * sum);
  }
  if (direct()) {
    weights32_.assign(p_.weights.begin(), p_.weights.end());
    return;
  }
  for (int64_t group = 0; group < g.groups; ++group) {
    packed_.push_back(packGemmWeights(p_.weights.data() + group * g.outPerGroup() * k, g.outPerGroup(), k));
  }
}

bool Int8ConvFast::pointwise() const {
  const ConvGeometry& g = p_.geometry;
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w;
}

size_t Int8ConvFast::workspaceBytes() const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  if (direct()) {
    const DirectPlane d = directPlane();
    const size_t virtual_outputs = static_cast<size_t>(g.out_h * d.sub_cols);
    return alignUp(static_cast<size_t>(d.elements()) * sizeof(int16_t)) +
           alignUp(virtual_outputs * sizeof(int32_t)) + alignUp(virtual_outputs);
  }
  const int64_t k = g.reduction();
  const size_t cols = pointwise() ? 0 : static_cast<size_t>(k * positions);
  return alignUp(cols) + alignUp(static_cast<size_t>(k) * sizeof(const int8_t*)) +
         alignUp(packedActivationBytes(k, positions)) +
         alignUp(static_cast<size_t>(kGemmRows * kGemmCols) * sizeof(int32_t));
}

// cols[k][p] for reduction index k = (ic, ky, kx) and output position p; out-of-bounds taps
// hold z_x, which the folded bias cancels exactly.
void Int8ConvFast::im2col(const int8_t* image, int64_t group, int8_t* cols) const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  const int64_t cin_g = g.inPerGroup();
  const int8_t pad = static_cast<int8_t>(p_.input_zero_point);
  for (int64_t ic = 0; ic < cin_g; ++ic) {
    const int8_t* plane = image + (group * cin_g + ic) * g.in_h * g.in_w;
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        int8_t* row = cols + ((ic * g.kernel_h + ky) * g.kernel_w + kx) * positions;
        const int64_t x_offset = kx * g.dilation_w - g.pad_left;
        const auto [lo, hi] = inBoundsRange(g.out_w, g.in_w, g.stride_w, x_offset);
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
          int8_t* dst = row + oy * g.out_w;
          if (iy < 0 || iy >= g.in_h || lo >= hi) {
            std::fill(dst, dst + g.out_w, pad);
            continue;
          }
          std::fill(dst, dst + lo, pad);
          std::fill(dst + hi, dst + g.out_w, pad);
          const int8_t* src = plane + iy * g.in_w + x_offset;
          if (g.stride_w == 1) {
            std::copy(src + lo, src + hi, dst + lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * g.stride_w];
          }
        }
      }
    }
  }
}

void Int8ConvFast::run(const int8_t* x, int8_t* y, void* workspace) const {
  if (p_.geometry.out_h * p_.geometry.out_w == 0) return;
  if (direct()) {
    runDirect(x, y, static_cast<uint8_t*>(workspace));
  } else {
    runGemm(x, y, static_cast<uint8_t*>(workspace));
  }
}

void Int8ConvFast::runGemm(const int8_t* x, int8_t* y, uint8_t* workspace) const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  const int64_t k = g.reduction();
  const int64_t cout_g = g.outPerGroup();
  const bool no_im2col = pointwise();
  int8_t* cols = reinterpret_cast<int8_t*>(workspace);
  uint8_t* next = workspace + alignUp(no_im2col ? 0 : static_cast<size_t>(k * positions));
  const int8_t** rows = reinterpret_cast<const int8_t**>(next);
  next += alignUp(static_cast<size_t>(k) * sizeof(const int8_t*));
  uint8_t* packed = next;
  next += alignUp(packedActivationBytes(k, positions));
  int32_t* tile = reinterpret_cast<int32_t*>(next);
  const int64_t depth_groups = (k + kGemmDepthStep - 1) / kGemmDepthStep;

  for (int64_t n = 0; n < g.batch; ++n) {
    const int8_t* image = x + n * g.in_channels * g.in_h * g.in_w;
    for (int64_t group = 0; group < g.groups; ++group) {
      if (no_im2col) {
        for (int64_t i = 0; i < k; ++i) rows[i] = image + (group * k + i) * positions;
      } else {
        im2col(image, group, cols);
        for (int64_t i = 0; i < k; ++i) rows[i] = cols + i * positions;
      }
      packGemmActivations(rows, k, positions, packed);
      const PackedGemmWeights& weights = packed_[static_cast<size_t>(group)];
      for (int64_t p0 = 0; p0 < positions; p0 += kGemmCols) {
        const int64_t np = std::min(kGemmCols, positions - p0);
        const uint8_t* panel = packed + (p0 / kGemmCols) * depth_groups * kGemmCols * kGemmDepthStep;
        for (int64_t r0 = 0; r0 < cout_g; r0 += kGemmRows) {
          gemmMicroTile(weights.rowBlock(r0 / kGemmRows), panel, depth_groups, tile);
          for (int64_t m = 0; m < std::min(kGemmRows, cout_g - r0); ++m) {
            const int64_t oc = group * cout_g + r0 + m;
            requantizeRowToInt8(tile + m * kGemmCols, np, folded_bias_[static_cast<size_t>(oc)],
                                p_.multipliers[static_cast<size_t>(oc)], p_.output_zero_point,
                                y + (n * g.out_channels + oc) * positions + p0);
          }
        }
      }
    }
  }
}

DirectPlane Int8ConvFast::directPlane() const {
  const ConvGeometry& g = p_.geometry;
  const int64_t rows = (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1;
  const int64_t cols = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  DirectPlane d;
  d.row_phases = g.stride_h;
  d.col_phases = g.stride_w;
  d.sub_rows = (rows + g.stride_h - 1) / g.stride_h;
  d.sub_cols = (cols + g.stride_w - 1) / g.stride_w;
  return d;
}

// One input channel per group (depthwise). Per input channel the padded plane (padding = z_x)
// is written once, split by phase (DirectPlane). Output (oy, ox) of tap (ky, kx) reads sub-plane
// (ky*d_h % s_h, kx*d_w % s_w) at (oy + ky*d_h / s_h, ox + kx*d_w / s_w), so with accumulators
// laid out with the sub-plane's row length ("virtual" columns ox >= out_w computed and thrown
// away) each tap is ONE contiguous widening multiply-add over the whole output plane, which the
// compiler vectorizes fully even for 7-wide outputs. Chunks keep the accumulators in L1.
void Int8ConvFast::runDirect(const int8_t* x, int8_t* y, uint8_t* workspace) const {
  // Accumulators per chunk: 8 KiB of int32, so a chunk and its input runs stay in L1.
  constexpr int64_t kChunk = 2048;
  const ConvGeometry& g = p_.geometry;
  const int64_t cout_g = g.outPerGroup();
  const int64_t taps = g.kernel_h * g.kernel_w;
  const DirectPlane d = directPlane();
  const int64_t virtual_outputs = g.out_h * d.sub_cols;
  int16_t* padded = reinterpret_cast<int16_t*>(workspace);
  uint8_t* next = workspace + alignUp(static_cast<size_t>(d.elements()) * sizeof(int16_t));
  int32_t* acc = reinterpret_cast<int32_t*>(next);
  int8_t* out_virtual =
      reinterpret_cast<int8_t*>(next + alignUp(static_cast<size_t>(virtual_outputs) * sizeof(int32_t)));
  // Padded rows/columns holding input (padded coordinate = input coordinate + pad).
  const auto [col_lo, col_hi] = inBoundsRange(d.sub_cols * d.col_phases, g.in_w, 1, -g.pad_left);
  const auto [row_lo, row_hi] = inBoundsRange(d.sub_rows * d.row_phases, g.in_h, 1, -g.pad_top);
  // Start of each tap's run inside the split plane.
  std::vector<int64_t> tap_offset(static_cast<size_t>(taps));
  for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      const int64_t r = ky * g.dilation_h, c = kx * g.dilation_w;
      const int64_t sub = (r % d.row_phases) * d.col_phases + c % d.col_phases;
      tap_offset[static_cast<size_t>(ky * g.kernel_w + kx)] =
          sub * d.subPlaneElements() + (r / d.row_phases) * d.sub_cols + c / d.col_phases;
    }
  }

  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t ic = 0; ic < g.in_channels; ++ic) {
      const int8_t* plane = x + (n * g.in_channels + ic) * g.in_h * g.in_w;
      std::fill(padded, padded + d.elements(), static_cast<int16_t>(p_.input_zero_point));
      for (int64_t r = row_lo; r < row_hi; ++r) {
        const int8_t* src = plane + (r - g.pad_top) * g.in_w - g.pad_left;
        int16_t* row = padded + (r % d.row_phases) * d.col_phases * d.subPlaneElements() +
                       (r / d.row_phases) * d.sub_cols;
        for (int64_t phase = 0; phase < d.col_phases; ++phase) {
          // Padded columns c = i * col_phases + phase within [col_lo, col_hi).
          int16_t* dst = row + phase * d.subPlaneElements();
          const int64_t first = (std::max<int64_t>(col_lo - phase, 0) + d.col_phases - 1) / d.col_phases;
          for (int64_t i = first; i * d.col_phases + phase < col_hi; ++i)
            dst[i] = src[i * d.col_phases + phase];
        }
      }
      for (int64_t oc = ic * cout_g; oc < (ic + 1) * cout_g; ++oc) {
        const int32_t* w = weights32_.data() + oc * taps;
        for (int64_t i0 = 0; i0 < virtual_outputs; i0 += kChunk) {
          const int64_t len = std::min(kChunk, virtual_outputs - i0);
          int32_t* a = acc + i0;
          std::fill(a, a + len, 0);
          for (int64_t t = 0; t < taps; ++t) {
            const int32_t wt = w[t];
            const int16_t* in = padded + tap_offset[static_cast<size_t>(t)] + i0;
            for (int64_t i = 0; i < len; ++i) a[i] += wt * in[i];
          }
        }
        requantizeRowToInt8(acc, virtual_outputs, folded_bias_[static_cast<size_t>(oc)],
                            p_.multipliers[static_cast<size_t>(oc)], p_.output_zero_point, out_virtual);
        int8_t* out = y + (n * g.out_channels + oc) * g.out_h * g.out_w;
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          std::copy(out_virtual + oy * d.sub_cols, out_virtual + oy * d.sub_cols + g.out_w,
                    out + oy * g.out_w);
        }
      }
    }
  }
}

}  // namespace npuc::quant
