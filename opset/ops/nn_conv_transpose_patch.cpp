#include "opset/ops/nn_conv_transpose_patch.h"

#include <algorithm>

#include "opset/ops/dnnl_layout.h"

namespace npuc::nn {

namespace {

using dnnl::memory;
using namespace dnnl_util;

enum Input : size_t { kX = 0, kW = 1, kB = 2 };

class PatchConvTransposeKernel : public Kernel {
 public:
  PatchConvTransposeKernel(const Shape& x, const Shape& w, bool has_bias, const KernelContext& ctx)
      : batch_(x[0]),
        channels_(x[1]),
        height_(x[2]),
        width_(x[3]),
        out_channels_(w[1]),
        kh_(w[2]),
        kw_(w[3]),
        has_bias_(has_bias) {
    rows_ = out_channels_ * kh_ * kw_;
    pixels_ = height_ * width_;
    const memory::desc a = plainDesc({rows_, channels_});
    const memory::desc b = plainDesc({channels_, pixels_});
    const memory::desc t = plainDesc({rows_, pixels_});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, t), userScratchpadAttr(), cpuEngine());
    a_desc_ = a, b_desc_ = b, t_desc_ = t;
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    t_offset_ = ws_.reserve(sizeof(float) * rows_ * pixels_);
    if (const Tensor* wc = ctx.constInput(kW)) {
      w_packed_ = Tensor(DType::Float32, {rows_, channels_});
      transposeWeights(static_cast<const float*>(wc->raw()), static_cast<float*>(w_packed_.raw()));
    } else {
      w_offset_ = ws_.reserve(sizeof(float) * rows_ * channels_);
    }
    prim_ = dnnl::matmul(pd);
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    const float* a = static_cast<const float*>(w_packed_.defined() ? w_packed_.raw() : nullptr);
    if (!a) {
      auto* wt = static_cast<float*>(WorkspaceLayout::at(io.workspace, w_offset_));
      transposeWeights(io.inputs[kW].as<float>(), wt);
      a = wt;
    }
    auto* t = static_cast<float*>(WorkspaceLayout::at(io.workspace, t_offset_));
    const float* bias = has_bias_ ? io.inputs[kB].as<float>() : nullptr;
    const float* x = io.inputs[kX].as<float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t n = 0; n < batch_; ++n) {
      execute(prim_, {{DNNL_ARG_SRC, wrap(a_desc_, a)},
                      {DNNL_ARG_WEIGHTS, wrap(b_desc_, x + n * channels_ * pixels_)},
                      {DNNL_ARG_DST, wrap(t_desc_, t)},
                      {DNNL_ARG_SCRATCHPAD, scratch_.get(io.workspace)}});
      scatter(t, bias, y + n * rows_ * pixels_);
    }
  }

 private:
  // ONNX W [C, M, kh, kw] is C x (M*kh*kw); the product wants its transpose.
  void transposeWeights(const float* w, float* wt) const {
    for (int64_t c = 0; c < channels_; ++c) {
      for (int64_t r = 0; r < rows_; ++r) wt[r * channels_ + c] = w[c * rows_ + r];
    }
  }

  // T row (m, a, b), column (i, j) is Y[m, i*kh + a, j*kw + b] minus the bias.
  void scatter(const float* t, const float* bias, float* y) const {
    const int64_t out_w = width_ * kw_;
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < out_channels_; ++m) {
      const float b = bias ? bias[m] : 0.f;
      for (int64_t i = 0; i < height_; ++i) {
        for (int64_t a = 0; a < kh_; ++a) {
          float* row = y + (m * height_ * kh_ + i * kh_ + a) * out_w;
          const float* src = t + ((m * kh_ + a) * kw_) * pixels_ + i * width_;
          if (kw_ == 2) {
            const float* s0 = src;
            const float* s1 = src + pixels_;
            for (int64_t j = 0; j < width_; ++j) {
              row[2 * j] = s0[j] + b;
              row[2 * j + 1] = s1[j] + b;
            }
          } else {
            for (int64_t j = 0; j < width_; ++j) {
              for (int64_t k = 0; k < kw_; ++k) row[j * kw_ + k] = src[k * pixels_ + j] + b;
            }
          }
        }
      }
    }
  }

  int64_t batch_, channels_, height_, width_, out_channels_, kh_, kw_;
  int64_t rows_ = 0, pixels_ = 0;
  bool has_bias_;
  memory::desc a_desc_, b_desc_, t_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  size_t t_offset_ = 0, w_offset_ = 0;
  Tensor w_packed_;
  dnnl::matmul prim_;
};

}  // namespace

bool isPatchConvTranspose(const Shape& x, const Shape& w, int64_t group, const TransposedWindow& win,
                          const Shape& y) {
  if (x.size() != 4 || group != 1) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (win.strides[i] != w[2 + i] || win.dilations[i] != 1 || win.pads_begin[i] != 0 ||
        win.pads_end[i] != 0 || y[2 + i] != x[2 + i] * w[2 + i]) {
      return false;
    }
  }
  return true;
}

std::unique_ptr<Kernel> makePatchConvTransposeKernel(const Shape& x, const Shape& w, bool has_bias,
                                                     const KernelContext& ctx) {
  return std::make_unique<PatchConvTransposeKernel>(x, w, has_bias, ctx);
}

}  // namespace npuc::nn
