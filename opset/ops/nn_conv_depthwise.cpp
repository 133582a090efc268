// Depthwise 2-D convolution (group == C == M) directly on NCHW.
//
// oneDNN's depthwise kernel (brdgmm_dw) needs channels-last data; with the two boundary reorders
// it costs 0.27 ms for a 32x112x112 3x3 layer, of which the convolution itself is 0.07 ms. A
// depthwise conv is a per-plane stencil, so on NCHW each output row is a sum of kernel-tap-scaled
// input rows: the interior columns run as contiguous (stride 1) or strided multiply-adds the
// compiler vectorizes, and only the few border columns need bounds checks.
#include <algorithm>

#include "opset/ops/nn_conv_kernel.h"

namespace npuc::nn {

namespace {

class DepthwiseConvKernel : public Kernel {
 public:
  explicit DepthwiseConvKernel(const ConvSpec& s) : spec_(s) {
    const Window& w = s.window;
    ih_ = s.x[2], iw_ = s.x[3], oh_ = s.y[2], ow_ = s.y[3];
    kh_ = w.kernel[0], kw_ = w.kernel[1];
    sh_ = w.strides[0], sw_ = w.strides[1], dh_ = w.dilations[0], dw_ = w.dilations[1];
    ph_ = w.pads_begin[0], pw_ = w.pads_begin[1];
    // Output columns whose every tap lies inside the row: ow*sw - pw >= 0 and
    // ow*sw - pw + (kw-1)*dw < iw.
    col_lo_ = std::min(ow_, (pw_ + sw_ - 1) / sw_);
    const int64_t last_start = iw_ - 1 - (kw_ - 1) * dw_ + pw_;  // largest ow*sw allowed
    col_hi_ = last_start < 0 ? col_lo_ : std::max(col_lo_, std::min(ow_, last_start / sw_ + 1));
  }

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[kConvX].as<float>();
    const float* w = io.inputs[kConvW].as<float>();
    const float* bias = spec_.has_bias ? io.inputs[kConvB].as<float>() : nullptr;
    const float* sum = spec_.has_sum ? io.inputs[kConvSum].as<float>() : nullptr;
    float* y = io.outputs[0].as<float>();
    const int64_t planes = spec_.x[0] * spec_.x[1], channels = spec_.x[1];
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t c = p % channels;
      plane(x + p * ih_ * iw_, w + c * kh_ * kw_, bias ? bias[c] : 0.f, sum ? sum + p * oh_ * ow_ : nullptr,
            y + p * oh_ * ow_);
    }
  }

 private:
  void plane(const float* x, const float* w, float b, const float* sum, float* y) const {
    for (int64_t oh = 0; oh < oh_; ++oh) {
      float* out = y + oh * ow_;
      std::fill(out, out + ow_, b);
      for (int64_t kh = 0; kh < kh_; ++kh) {
        const int64_t ih = oh * sh_ - ph_ + kh * dh_;
        if (ih < 0 || ih >= ih_) continue;
        accumulateRow(x + ih * iw_, w + kh * kw_, out);
      }
      if (sum) {
        const float* s = sum + oh * ow_;
        for (int64_t i = 0; i < ow_; ++i) out[i] += s[i];
      }
      applyActivation(spec_.act, out, ow_);
    }
  }

  // out[ow] += sum_kw w[kw] * row[ow*sw - pw + kw*dw] over the taps inside the row.
  void accumulateRow(const float* row, const float* w, float* out) const {
    for (int64_t ow = 0; ow < col_lo_; ++ow) borderColumn(row, w, ow, out);
    for (int64_t kw = 0; kw < kw_; ++kw) {
      const float wv = w[kw];
      const float* src = row + kw * dw_ - pw_;
      if (sw_ == 1) {
        for (int64_t ow = col_lo_; ow < col_hi_; ++ow) out[ow] += wv * src[ow];
      } else if (sw_ == 2) {
        for (int64_t ow = col_lo_; ow < col_hi_; ++ow) out[ow] += wv * src[2 * ow];
      } else {
        for (int64_t ow = col_lo_; ow < col_hi_; ++ow) out[ow] += wv * src[ow * sw_];
      }
    }
    for (int64_t ow = col_hi_; ow < ow_; ++ow) borderColumn(row, w, ow, out);
  }

  void borderColumn(const float* row, const float* w, int64_t ow, float* out) const {
    for (int64_t kw = 0; kw < kw_; ++kw) {
      const int64_t iw = ow * sw_ - pw_ + kw * dw_;
      if (iw >= 0 && iw < iw_) out[ow] += w[kw] * row[iw];
    }
  }

  ConvSpec spec_;
  int64_t ih_, iw_, oh_, ow_, kh_, kw_, sh_, sw_, dh_, dw_, ph_, pw_;
  int64_t col_lo_, col_hi_;  // interior output columns [col_lo_, col_hi_)
};

}  // namespace

bool isPlainDepthwise2d(const ConvSpec& s) {
  return s.x.size() == 4 && s.group == s.x[1] && s.w[0] == s.group && s.w[1] == 1;
}

std::unique_ptr<Kernel> makeDepthwiseConvKernel(const ConvSpec& spec) {
  return std::make_unique<DepthwiseConvKernel>(spec);
}

}  // namespace npuc::nn
