// Wide-accumulator Conv (quant/sim/wide_mac.h): the reference loop and the tiled im2col fast path.
#include <algorithm>

#include "common/error.h"
#include "quant/requant_wide.h"
#include "quant/sim/wide_dot.h"
#include "quant/sim/wide_mac.h"

namespace npuc::quant {

namespace {

// Output positions per im2col tile: the tile's int32 panel (positions x reduction) stays in L2.
constexpr int64_t kTilePositions = 64;

}  // namespace

void validateWideConv(const WideConvParams& p, const std::string& what) {
  const ConvGeometry& g = p.geometry;
  const int64_t cout = g.out_channels, k = g.reduction();
  const bool ok = g.groups > 0 && g.in_channels % g.groups == 0 && cout % g.groups == 0 &&
                  static_cast<int64_t>(p.weights.size()) == cout * k &&
                  static_cast<int64_t>(p.bias.size()) == cout &&
                  static_cast<int64_t>(p.multipliers.size()) == cout &&
                  (p.groups.size == 0 ||
                   static_cast<int64_t>(p.groups.multipliers.size()) == cout * p.groups.groupsPer(k));
  if (!ok) throw ConfigError(what + ": wide conv parameters do not match the geometry");
}

void wideConvReference(const WideConvParams& p, const int16_t* x, int16_t* y) {
  const ConvGeometry& g = p.geometry;
  const int64_t k = g.reduction(), kernel = g.kernel_h * g.kernel_w;
  const int64_t groups_per_channel = p.groups.groupsPer(k);
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t c = 0; c < g.out_channels; ++c) {
      const int64_t first_in = (c / g.outPerGroup()) * g.inPerGroup();
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          int64_t acc = p.bias[static_cast<size_t>(c)];
          for (int64_t grp = 0; grp < groups_per_channel; ++grp) {
            const int64_t begin = p.groups.size > 0 ? grp * p.groups.size : 0;
            const int64_t end = p.groups.size > 0 ? std::min(k, begin + p.groups.size) : k;
            int64_t partial = 0;
            for (int64_t r = begin; r < end; ++r) {
              const int64_t ci = r / kernel, kh = (r % kernel) / g.kernel_w, kw = r % g.kernel_w;
              const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
              if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;  // padding is real 0
              const int64_t qx = x[((b * g.in_channels + first_in + ci) * g.in_h + ih) * g.in_w + iw];
              partial += (qx - p.input_zero_point) * p.weights[static_cast<size_t>(c * k + r)];
            }
            const int64_t m = p.groups.size > 0
                                  ? p.groups.multipliers[static_cast<size_t>(c * groups_per_channel + grp)]
                                  : 1;
            acc += m * partial;
          }
          y[((b * g.out_channels + c) * g.out_h + oh) * g.out_w + ow] =
              requantizeToInt16(acc, p.multipliers[static_cast<size_t>(c)], p.output_zero_point);
        }
      }
    }
  }
}

void wideConvFast(const WideConvParams& p, const int16_t* x, int16_t* y) {
  const ConvGeometry& g = p.geometry;
  const int64_t k = g.reduction(), positions = g.out_h * g.out_w;
  const int64_t groups_per_channel = p.groups.groupsPer(k);
  std::vector<int32_t> weights(p.weights.begin(), p.weights.end());
  std::vector<int32_t> panel(static_cast<size_t>(kTilePositions * k));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t cg = 0; cg < g.groups; ++cg) {
      const int16_t* plane = x + (b * g.in_channels + cg * g.inPerGroup()) * g.in_h * g.in_w;
      for (int64_t t0 = 0; t0 < positions; t0 += kTilePositions) {
        const int64_t tile = std::min(kTilePositions, positions - t0);
        // im2col of the tile with z_x subtracted; padding is real 0, i.e. 0 after the subtraction.
        for (int64_t t = 0; t < tile; ++t) {
          const int64_t oh = (t0 + t) / g.out_w, ow = (t0 + t) % g.out_w;
          int32_t* row = panel.data() + t * k;
          int64_t r = 0;
          for (int64_t ci = 0; ci < g.inPerGroup(); ++ci) {
            const int16_t* channel = plane + ci * g.in_h * g.in_w;
            for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
              const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
              const bool row_in = ih >= 0 && ih < g.in_h;
              for (int64_t kw = 0; kw < g.kernel_w; ++kw, ++r) {
                const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                row[r] =
                    row_in && iw >= 0 && iw < g.in_w ? channel[ih * g.in_w + iw] - p.input_zero_point : 0;
              }
            }
          }
        }
        for (int64_t j = 0; j < g.outPerGroup(); ++j) {
          const int64_t c = cg * g.outPerGroup() + j;
          const int32_t* w = weights.data() + c * k;
          const int32_t* mults =
              p.groups.size > 0 ? p.groups.multipliers.data() + c * groups_per_channel : nullptr;
          int16_t* out = y + (b * g.out_channels + c) * positions + t0;
          const int64_t bias = p.bias[static_cast<size_t>(c)];
          const FixedPointMultiplier m = p.multipliers[static_cast<size_t>(c)];
          for (int64_t t = 0; t < tile; ++t) {
            const int64_t acc = bias + groupedDotWide(w, panel.data() + t * k, k, p.groups.size, mults);
            out[t] = requantizeToInt16(acc, m, p.output_zero_point);
          }
        }
      }
    }
  }
}

}  // namespace npuc::quant
