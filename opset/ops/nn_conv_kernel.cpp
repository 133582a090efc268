// Three convolution implementations, chosen per node at load:
//
//  * DepthwiseConvKernel (nn_conv_depthwise.cpp): 2-D depthwise convs as an NCHW stencil.
//  * PointwiseConvKernel: a 1x1 / stride-1 / unpadded / ungrouped conv on NCHW data is exactly
//    Y[n] (M x HW) = W (M x C) * X[n] (C x HW); oneDNN's matmul (brg:avx512_core) runs it on the
//    plain layout with no reorder at all.
//  * DirectConvKernel: oneDNN convolution with src/dst format_tag::any, which picks the
//    channels-last brgconv / brdgmm_dw kernels, with reorders to and from NCHW at the boundary.
//
// Measured single-threaded on the AVX-512 build machine (oneDNN 2.6, ms; "nchw" = direct conv
// forced onto nchw src/dst, which selects x64:gemm:jit; "any" = brgconv + the two reorders):
//   shape (C->M @ HxW, kernel)     nchw gemm   any+reorders   matmul on NCHW
//   mbv2 dw 32 @112, 3x3           1.217       0.072+0.199    -
//   mbv2 stem 3->32 @224, 3x3 s2   0.439       0.097+0.141    -
//   r50 64->64 @56, 3x3            1.513       0.895+0.101    -
//   mbv2 24->144 @56, 1x1          0.275       0.092+0.155    0.089
//   r50 256->64 @56, 1x1           0.476       0.395+0.246    0.394
//   mbv2 960->160 @7, 1x1          0.084       0.058+0.014    0.081
//   r50 2048->512 @7, 1x1          0.590       0.407+0.035    1.098
// So depthwise convs avoid oneDNN (the reorders cost 3x the convolution), pointwise convs go to matmul unless
// the spatial size is small (matmul's N dim too short to fill its tiles), and everything else goes through
// the reordered direct convolution.
#include "opset/ops/nn_conv_kernel.h"

#include <algorithm>
#include <cstring>

#include "opset/ops/dnnl_layout.h"

namespace npuc::nn {

namespace {

using dnnl::memory;
using namespace dnnl_util;

// Below this many output pixels a pointwise conv is faster as a direct conv (see table above).
constexpr int64_t kMinMatmulSpatial = 128;

int64_t spatialSize(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 2; i < s.size(); ++i) n *= s[i];
  return n;
}

bool isPointwise(const ConvSpec& s) {
  if (s.group != 1) return false;
  for (size_t i = 0; i < s.window.rank(); ++i) {
    if (s.window.kernel[i] != 1 || s.window.strides[i] != 1 || s.window.pads_begin[i] != 0 ||
        s.window.pads_end[i] != 0) {
      return false;
    }
  }
  return true;
}

dnnl::post_ops convPostOps(const ConvSpec& s) {
  dnnl::post_ops ops;
  if (s.has_sum) ops.append_sum(1.f);
  appendEltwise(ops, s.act);
  return ops;
}

const void* constData(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.constInput(i);
  return t ? t->raw() : nullptr;
}

// Y[n] = W * X[n] (+ b) (+ Sum[n]), activation fused, all on the plain NCHW buffers.
//
// oneDNN's brg matmul has no per-row bias (a [M, 1] bias or binary post-op falls back to the
// reference implementation, ~500x slower), so the bias is pre-filled into Y (together with Sum
// when there is one) and accumulated through a sum post-op, which brg fuses.
class PointwiseConvKernel : public Kernel {
 public:
  PointwiseConvKernel(const ConvSpec& s, const KernelContext& ctx)
      : spec_(s), channels_(s.w[0]), pixels_(spatialSize(s.x)) {
    w_desc_ = plainDesc({channels_, s.w[1]});
    x_desc_ = plainDesc({s.w[1], pixels_});
    y_desc_ = plainDesc({channels_, pixels_});
    dnnl::post_ops ops;
    if (s.has_bias || s.has_sum) ops.append_sum(1.f);
    appendEltwise(ops, s.act);
    const dnnl::matmul::desc desc(w_desc_, x_desc_, y_desc_);
    const dnnl::matmul::primitive_desc pd(desc, userScratchpadAttr(ops), cpuEngine());
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    prim_ = dnnl::matmul(pd);
    if (const Tensor* w = ctx.constInput(kConvW)) w_const_ = *w;  // shares storage: keeps it alive
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    const float* w =
        w_const_.defined() ? static_cast<const float*>(w_const_.raw()) : io.inputs[kConvW].as<float>();
    const float* x = io.inputs[kConvX].as<float>();
    const float* bias = spec_.has_bias ? io.inputs[kConvB].as<float>() : nullptr;
    const float* sum = spec_.has_sum ? io.inputs[kConvSum].as<float>() : nullptr;
    float* y = io.outputs[0].as<float>();
    const int64_t x_step = spec_.x[1] * pixels_, y_step = channels_ * pixels_;
    for (int64_t n = 0; n < spec_.x[0]; ++n) {
      prefill(bias, sum ? sum + n * y_step : nullptr, y + n * y_step);
      execute(prim_, {{DNNL_ARG_SRC, wrap(w_desc_, w)},
                      {DNNL_ARG_WEIGHTS, wrap(x_desc_, x + n * x_step)},
                      {DNNL_ARG_DST, wrap(y_desc_, y + n * y_step)},
                      {DNNL_ARG_SCRATCHPAD, scratch_.get(io.workspace)}});
    }
  }

 private:
  // Writes what the sum post-op adds into one image's output: bias[m] (+ sum) per channel row.
  void prefill(const float* bias, const float* sum, float* y) const {
    if (!bias) {
      if (sum && sum != y) std::memcpy(y, sum, sizeof(float) * channels_ * pixels_);
      return;
    }
    for (int64_t m = 0; m < channels_; ++m) {
      float* row = y + m * pixels_;
      const float b = bias[m];
      if (sum) {
        const float* s = sum + m * pixels_;
        for (int64_t i = 0; i < pixels_; ++i) row[i] = s[i] + b;
      } else {
        std::fill(row, row + pixels_, b);
      }
    }
  }

  ConvSpec spec_;
  int64_t channels_, pixels_;
  memory::desc w_desc_, x_desc_, y_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  dnnl::matmul prim_;
  Tensor w_const_;
};

// oneDNN's weight dims: [G, M/G, C/G, k...] for grouped convs, the ONNX [M, C/G, k...] otherwise.
// Both describe the ONNX buffer as is.
Shape oneDnnConvWeights(const ConvSpec& s) {
  if (s.group == 1) return s.w;
  Shape w{s.group, s.w[0] / s.group};
  w.insert(w.end(), s.w.begin() + 1, s.w.end());
  return w;
}

// oneDNN counts dilation from 0 (no dilation), ONNX from 1.
memory::dims oneDnnDilations(const Window& w) {
  memory::dims d;
  for (int64_t x : w.dilations) d.push_back(x - 1);
  return d;
}

// How an activation is stored between kernels: plain NCHW, or NHWC inside a channels-last region.
memory::desc storedDesc(const Shape& shape, bool nhwc) {
  return nhwc ? memory::desc(toDims(shape), memory::data_type::f32, memory::format_tag::nhwc)
              : plainDesc(shape);
}

// What the primitive is created with: the stored NHWC layout as is, otherwise oneDNN's choice.
memory::desc primitiveDesc(const Shape& shape, bool nhwc) {
  return nhwc ? storedDesc(shape, true)
              : memory::desc(toDims(shape), memory::data_type::f32, memory::format_tag::any);
}

class DirectConvKernel : public Kernel {
 public:
  DirectConvKernel(const ConvSpec& s, const KernelContext& ctx) : spec_(s) {
    const memory::desc any_x = primitiveDesc(s.x, s.x_nhwc);
    const memory::desc any_y = primitiveDesc(s.y, s.y_nhwc);
    const Shape w_shape = oneDnnConvWeights(s);
    const memory::desc any_w(toDims(w_shape), memory::data_type::f32, memory::format_tag::any);
    if (s.has_bias) b_desc_ = plainDesc({s.w[0]});
    const Window& win = s.window;
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_x, any_w, b_desc_, any_y,
        toDims(win.strides), oneDnnDilations(win), toDims(win.pads_begin), toDims(win.pads_end));
    const dnnl::convolution_forward::primitive_desc pd(desc, userScratchpadAttr(convPostOps(s)), cpuEngine());
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    src_ = LayoutAdapter(storedDesc(s.x, s.x_nhwc), pd.src_desc(), ws_);
    dst_ = LayoutAdapter(storedDesc(s.y, s.y_nhwc), pd.dst_desc(), ws_);
    weights_ = PackedWeights(plainDesc(w_shape), pd.weights_desc(), constData(ctx, kConvW), ws_);
    prim_ = dnnl::convolution_forward(pd);
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    void* ws = io.workspace;
    void* y = io.outputs[0].data;
    const void* sum = spec_.has_sum ? io.inputs[kConvSum].data : nullptr;
    const memory dst = dst_.output(y, ws, sum);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_.input(io.inputs[kConvX].data, ws)},
                                         {DNNL_ARG_WEIGHTS, weights_.get(io.inputs[kConvW].data, ws)},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratch_.get(ws)}};
    if (spec_.has_bias) args.emplace(DNNL_ARG_BIAS, wrap(b_desc_, io.inputs[kConvB].data));
    execute(prim_, args);
    dst_.finishOutput(dst, y);
  }

 private:
  ConvSpec spec_;
  memory::desc b_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  LayoutAdapter src_, dst_;
  PackedWeights weights_;
  dnnl::convolution_forward prim_;
};

}  // namespace

std::unique_ptr<Kernel> makeConvKernel(const ConvSpec& spec, const KernelContext& ctx) {
  try {
    // Inside a channels-last region every conv is oneDNN's (brgconv / brdgmm_dw on NHWC).
    if (spec.x_nhwc || spec.y_nhwc) return std::make_unique<DirectConvKernel>(spec, ctx);
    if (isPlainDepthwise2d(spec)) return makeDepthwiseConvKernel(spec);
    if (isPointwise(spec) && spatialSize(spec.y) >= kMinMatmulSpatial) {
      return std::make_unique<PointwiseConvKernel>(spec, ctx);
    }
    return std::make_unique<DirectConvKernel>(spec, ctx);
  } catch (const dnnl::error& e) {
    const Window& w = spec.window;
    throw UnsupportedOpError(ctx.node.opType() + " node '" + ctx.node.name() + "': oneDNN refused X " +
                             shapeStr(spec.x) + " W " + shapeStr(spec.w) + " group " +
                             std::to_string(spec.group) + " strides " + shapeStr(w.strides) + " dilations " +
                             shapeStr(w.dilations) + " pads " + shapeStr(w.pads_begin) + "/" +
                             shapeStr(w.pads_end) + ": " + e.what());
  }
}

}  // namespace npuc::nn
