#include "quant/sim/int8_conv.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/sim/accumulator_check.h"
#include "quant/sim/depthwise_groups.h"
#include "quant/sim/phase_plane.h"
#include "quant/sim/requant_row.h"
#include "quant/sim/requant_vector.h"

namespace npuc::quant {

namespace {

// Workspace pieces start on cache-line boundaries (and so on 512-bit vector boundaries).
constexpr size_t kWorkspaceAlign = 64;

size_t alignUp(size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
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
  checkAccumulatorBound(p.weights.data(), g.out_channels, g.reduction(), p.bias, what);
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
  for (int64_t oc = 0; oc < g.out_channels; ++oc) {
    const size_t c = static_cast<size_t>(oc);
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += p_.weights[static_cast<size_t>(oc * k + i)];
    channel_requant_.emplace_back(static_cast<int32_t>(p_.bias[c] - z * sum), p_.multipliers[c]);
  }
  if (direct()) {
    weights32_.assign(p_.weights.begin(), p_.weights.end());
    const DepthwiseTapGroups groups = DepthwiseTapGroups::of(PhasePlane::forConv(g).tapOffsets(g));
    group_offsets_ = groups.offsets;
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      const std::vector<int32_t> w = groups.pack(p_.weights.data() + oc * k);
      group_weights_.insert(group_weights_.end(), w.begin(), w.end());
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += p_.weights[static_cast<size_t>(oc * k + i)];
      unsigned_bias_.push_back(static_cast<int32_t>(p_.bias[static_cast<size_t>(oc)] -
                                                    (int64_t{p_.input_zero_point} + kUnsignedOffset) * sum));
    }
    pair_taps_in_int16_ = std::all_of(p_.weights.begin(), p_.weights.end(),
                                      [](int8_t w) { return w >= -kWeightQMax && w <= kWeightQMax; });
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
  const PhasePlane d = PhasePlane::forConv(g);
  const size_t outputs = static_cast<size_t>(d.virtualOutputs(g));
  if (direct()) {
    return alignUp(static_cast<size_t>(d.elements() + kDepthwiseReadSlack)) +
           alignUp(outputs * sizeof(int32_t)) + alignUp(outputs);
  }
  const int64_t k = g.reduction();
  const size_t planes = pointwise() ? 0 : static_cast<size_t>(g.inPerGroup() * d.elements());
  return alignUp(planes) + alignUp(static_cast<size_t>(k) * sizeof(const int8_t*)) +
         alignUp(packedActivationBytes(k, kGemmCols));
}

void Int8ConvFast::run(const int8_t* x, int8_t* y, void* workspace) const {
  if (p_.geometry.out_h * p_.geometry.out_w == 0) return;
  if (direct()) {
    runDirect(x, y, static_cast<uint8_t*>(workspace));
  } else {
    runGemm(x, y, static_cast<uint8_t*>(workspace));
  }
}

bool Int8ConvFast::wideTail(int64_t panel_columns) const {
  if (!gemmWideTilesFast() || panel_columns >= kGemmCols || p_.geometry.outPerGroup() % kGemmWideRows)
    return false;
  // Columns of work: the row tiles run 16 (half tile) or 32, the wide tiles a multiple of 8.
  const int64_t row_tiles = panel_columns <= kGemmCols / 2 ? kGemmCols / 2 : kGemmCols;
  return roundUp(panel_columns, kGemmWideCols) < row_tiles;
}

// Per group: B's rows are the taps' contiguous runs in the split planes (or the input planes
// themselves for a pointwise conv), packed one column panel of dense output positions at a time
// (the packing skips the runs' virtual columns, which would otherwise cost GEMM work: 28% more
// at 7x7 with a 3x3 kernel); the panel stays in L1 while every row block multiplies it (one
// micro tile each, requantized straight into y).
void Int8ConvFast::runGemm(const int8_t* x, int8_t* y, uint8_t* workspace) const {
  const ConvGeometry& g = p_.geometry;
  const bool no_copy = pointwise();
  const PhasePlane d = PhasePlane::forConv(g);
  const int64_t positions = g.out_h * g.out_w;
  // Outputs are dense (out_h x out_w) columns of the GEMM; the tap runs are on the virtual grid.
  const int64_t columns = positions;
  const int64_t k = g.reduction();
  const int64_t cin_g = g.inPerGroup(), cout_g = g.outPerGroup();
  const int64_t taps = g.kernel_h * g.kernel_w;
  int8_t* planes = reinterpret_cast<int8_t*>(workspace);
  uint8_t* next = workspace + alignUp(no_copy ? 0 : static_cast<size_t>(cin_g * d.elements()));
  const int8_t** rows = reinterpret_cast<const int8_t**>(next);
  next += alignUp(static_cast<size_t>(k) * sizeof(const int8_t*));
  uint8_t* panel = next;  // one column panel of packed activations at a time
  const int64_t depth_groups = (k + kGemmDepthStep - 1) / kGemmDepthStep;
  const std::vector<int64_t> tap_offsets = d.tapOffsets(g);
  const int8_t pad = static_cast<int8_t>(p_.input_zero_point);

  for (int64_t n = 0; n < g.batch; ++n) {
    const int8_t* image = x + n * g.in_channels * g.in_h * g.in_w;
    for (int64_t group = 0; group < g.groups; ++group) {
      const int8_t* group_in = image + group * cin_g * g.in_h * g.in_w;
      if (no_copy) {
        for (int64_t i = 0; i < k; ++i) rows[i] = group_in + i * positions;
      } else {
        for (int64_t ic = 0; ic < cin_g; ++ic) {
          int8_t* split = planes + ic * d.elements();
          d.fill(g, group_in + ic * g.in_h * g.in_w, pad, split);
          for (int64_t t = 0; t < taps; ++t)
            rows[ic * taps + t] = split + tap_offsets[static_cast<size_t>(t)];
        }
      }
      const PackedGemmWeights& weights = packed_[static_cast<size_t>(group)];
      int8_t* out_base = y + (n * g.out_channels + group * cout_g) * positions;
      for (int64_t p0 = 0; p0 < columns; p0 += kGemmCols) {
        const int64_t np = std::min(kGemmCols, columns - p0);
        if (no_copy) {
          packGemmPanel(rows, k, p0, np, panel);
        } else {
          packGemmPanelStrided(rows, k, p0, np, g.out_w, d.sub_cols, panel);
        }
        int64_t r0 = 0;
        if (wideTail(np)) {
          const int64_t block_stride = weights.rowBlock(1) - weights.rowBlock(0);
          for (; r0 < cout_g; r0 += kGemmWideRows) {
            const size_t oc = static_cast<size_t>(group * cout_g + r0);
            gemmWideTilesToInt8(weights.rowBlock(r0 / kGemmRows), block_stride, panel, depth_groups, np,
                                channel_requant_.data() + oc, p_.output_zero_point,
                                out_base + r0 * columns + p0, columns);
          }
        }
        for (; r0 < cout_g; r0 += kGemmRows) {
          const size_t oc = static_cast<size_t>(group * cout_g + r0);
          gemmMicroTileToInt8(weights.rowBlock(r0 / kGemmRows), panel, depth_groups,
                              std::min(kGemmRows, cout_g - r0), np, channel_requant_.data() + oc,
                              p_.output_zero_point, out_base + r0 * columns + p0, columns);
        }
      }
    }
  }
}

// One input channel per group (depthwise): per input channel the split plane (int8, padding
// z_x) is written once; per output channel each tap is one contiguous widening multiply-add
// over the whole virtual output plane, which the compiler vectorizes fully even for 7-wide
// outputs. Chunks keep the accumulators in L1.
void Int8ConvFast::runDirect(const int8_t* x, int8_t* y, uint8_t* workspace) const {
  // Accumulators per chunk: 8 KiB of int32, so a chunk and its input runs stay in L1.
  constexpr int64_t kChunk = 2048;
  const ConvGeometry& g = p_.geometry;
  const int64_t cout_g = g.outPerGroup();
  const int64_t taps = g.kernel_h * g.kernel_w;
  const PhasePlane d = PhasePlane::forConv(g);
  const int64_t virtual_outputs = d.virtualOutputs(g);
  int8_t* padded = reinterpret_cast<int8_t*>(workspace);
  uint8_t* next = workspace + alignUp(static_cast<size_t>(d.elements() + kDepthwiseReadSlack));
  int32_t* acc = reinterpret_cast<int32_t*>(next);
  int8_t* out_virtual =
      reinterpret_cast<int8_t*>(next + alignUp(static_cast<size_t>(virtual_outputs) * sizeof(int32_t)));
  const std::vector<int64_t> tap_offsets = d.tapOffsets(g);

  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t ic = 0; ic < g.in_channels; ++ic) {
      d.fill(g, x + (n * g.in_channels + ic) * g.in_h * g.in_w, static_cast<int8_t>(p_.input_zero_point),
             padded);
#ifdef NPUC_DEPTHWISE_VNNI
      // The u8 kernel reads q_x + 128: the plane flipped in place once for the group's channels
      // (a zero multiplier, whose outputs the scalar rule gives, keeps the int8 loop below).
      const bool vnni =
          std::none_of(p_.multipliers.begin() + ic * cout_g, p_.multipliers.begin() + (ic + 1) * cout_g,
                       [](const FixedPointMultiplier& m) { return m.isZero(); });
      if (vnni) {
        uint8_t* u8 = reinterpret_cast<uint8_t*>(padded);
        for (int64_t i = 0; i < d.elements(); ++i) u8[i] ^= 0x80;
        std::fill(u8 + d.elements(), u8 + d.elements() + kDepthwiseReadSlack, uint8_t{0});
        const int64_t groups = static_cast<int64_t>(group_offsets_.size());
        for (int64_t oc = ic * cout_g; oc < (ic + 1) * cout_g; ++oc) {
          const size_t c = static_cast<size_t>(oc);
          depthwiseChannelU8(u8, group_offsets_.data(), group_weights_.data() + oc * groups, groups,
                             virtual_outputs, unsigned_bias_[c],
                             RequantVector(channel_requant_[c], p_.output_zero_point), out_virtual);
          d.compact(g, out_virtual, y + (n * g.out_channels + oc) * g.out_h * g.out_w);
        }
        continue;
      }
#endif
      for (int64_t oc = ic * cout_g; oc < (ic + 1) * cout_g; ++oc) {
        const int32_t* w = weights32_.data() + oc * taps;
        for (int64_t i0 = 0; i0 < virtual_outputs; i0 += kChunk) {
          const int64_t len = std::min(kChunk, virtual_outputs - i0);
          int32_t* a = acc + i0;
          std::fill(a, a + len, 0);
          int64_t t = 0;
          if (pair_taps_in_int16_) {
            // |w| <= 127 and |q| <= 128: each product and the sum of two fit int16 exactly
            // (2 * 127 * 128 = 32512), so two taps cost one 16-bit multiply-add and one widening.
            for (; t + 1 < taps; t += 2) {
              const int16_t w0 = static_cast<int16_t>(w[t]), w1 = static_cast<int16_t>(w[t + 1]);
              const int8_t* in0 = padded + tap_offsets[static_cast<size_t>(t)] + i0;
              const int8_t* in1 = padded + tap_offsets[static_cast<size_t>(t + 1)] + i0;
              for (int64_t i = 0; i < len; ++i) {
                a[i] += static_cast<int16_t>(static_cast<int16_t>(w0 * in0[i]) +
                                             static_cast<int16_t>(w1 * in1[i]));
              }
            }
          }
          for (; t < taps; ++t) {
            const int32_t wt = w[t];
            const int8_t* in = padded + tap_offsets[static_cast<size_t>(t)] + i0;
            for (int64_t i = 0; i < len; ++i) a[i] += wt * in[i];
          }
        }
        requantizeRowToInt8(acc, virtual_outputs, channel_requant_[static_cast<size_t>(oc)].bias,
                            p_.multipliers[static_cast<size_t>(oc)], p_.output_zero_point, out_virtual);
        d.compact(g, out_virtual, y + (n * g.out_channels + oc) * g.out_h * g.out_w);
      }
    }
  }
}

}  // namespace npuc::quant
