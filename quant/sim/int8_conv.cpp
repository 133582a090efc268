#include "quant/sim/int8_conv.h"

#include <algorithm>
#include <cstdlib>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {

namespace {

// Largest |q_x - z_x| * |q_w| of one product term.
constexpr int64_t kMaxProductMagnitude = 255 * kWeightQMax;
// Output channels accumulated together in the fast loop: each im2col row loaded once serves
// this many channels (register blocking); 4 int32 rows of a tile stay in L1.
constexpr int64_t kChannelBlock = 4;
// Output positions per accumulator tile: 4 channels x 256 positions x 4 bytes = 4 KiB.
constexpr int64_t kPositionBlock = 256;

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
  const int64_t k = p_.geometry.reduction();
  weights_.assign(p_.weights.begin(), p_.weights.end());
  folded_bias_.resize(static_cast<size_t>(p_.geometry.out_channels));
  for (int64_t oc = 0; oc < p_.geometry.out_channels; ++oc) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += p_.weights[static_cast<size_t>(oc * k + i)];
    folded_bias_[static_cast<size_t>(oc)] =
        static_cast<int32_t>(p_.bias[static_cast<size_t>(oc)] - int64_t{p_.input_zero_point} * sum);
  }
}

size_t Int8ConvFast::workspaceBytes() const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  return static_cast<size_t>(g.reduction() * positions + kChannelBlock * kPositionBlock) * sizeof(int32_t);
}

// cols[k][p] for reduction index k = (ic, ky, kx) and output position p; out-of-bounds taps
// hold z_x, which the folded bias cancels exactly.
void Int8ConvFast::im2col(const int8_t* image, int64_t group, int32_t* cols) const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  const int64_t cin_g = g.inPerGroup();
  for (int64_t ic = 0; ic < cin_g; ++ic) {
    const int8_t* plane = image + (group * cin_g + ic) * g.in_h * g.in_w;
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        int32_t* row = cols + ((ic * g.kernel_h + ky) * g.kernel_w + kx) * positions;
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
          int32_t* dst = row + oy * g.out_w;
          if (iy < 0 || iy >= g.in_h) {
            std::fill(dst, dst + g.out_w, p_.input_zero_point);
            continue;
          }
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
            dst[ox] = (ix < 0 || ix >= g.in_w) ? p_.input_zero_point : plane[iy * g.in_w + ix];
          }
        }
      }
    }
  }
}

void Int8ConvFast::run(const int8_t* x, int8_t* y, void* workspace) const {
  const ConvGeometry& g = p_.geometry;
  const int64_t positions = g.out_h * g.out_w;
  const int64_t k = g.reduction();
  const int64_t cout_g = g.outPerGroup();
  int32_t* cols = static_cast<int32_t*>(workspace);
  int32_t* acc = cols + k * positions;
  for (int64_t n = 0; n < g.batch; ++n) {
    const int8_t* image = x + n * g.in_channels * g.in_h * g.in_w;
    for (int64_t group = 0; group < g.groups; ++group) {
      im2col(image, group, cols);
      for (int64_t oc0 = group * cout_g; oc0 < (group + 1) * cout_g; oc0 += kChannelBlock) {
        const int64_t nc = std::min(kChannelBlock, (group + 1) * cout_g - oc0);
        for (int64_t p0 = 0; p0 < positions; p0 += kPositionBlock) {
          const int64_t np = std::min(kPositionBlock, positions - p0);
          for (int64_t c = 0; c < nc; ++c) std::fill(acc + c * np, acc + (c + 1) * np, folded_bias_[oc0 + c]);
          for (int64_t i = 0; i < k; ++i) {
            const int32_t* col = cols + i * positions + p0;
            for (int64_t c = 0; c < nc; ++c) {
              const int32_t w = weights_[static_cast<size_t>((oc0 + c) * k + i)];
              int32_t* a = acc + c * np;
              for (int64_t j = 0; j < np; ++j) a[j] += w * col[j];
            }
          }
          for (int64_t c = 0; c < nc; ++c) {
            int8_t* out = y + ((n * g.out_channels + oc0 + c) * positions) + p0;
            requantizeToInt8Batch(acc + c * np, np, p_.multipliers[static_cast<size_t>(oc0 + c)],
                                  p_.output_zero_point, out);
          }
        }
      }
    }
  }
}

}  // namespace npuc::quant
