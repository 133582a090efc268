// ConvTranspose: schema, shape inference and a oneDNN deconvolution kernel. Like Conv, src/dst
// use format_tag::any (oneDNN picks channels-last brgdeconv on AVX-512) with NCHW reorders at the
// boundary; constant weights are packed once, non-constant weights on every run.
#include <algorithm>

#include "opset/ops/dnnl_layout.h"
#include "opset/ops/nn_conv_transpose_patch.h"
#include "opset/ops/nn_ops.h"
#include "opset/ops/nn_window.h"

namespace npuc::nn {

namespace {

using dnnl::memory;
using namespace dnnl_util;

enum Input : size_t { kX = 0, kW = 1, kB = 2 };

struct ConvTransposeSpec {
  Shape x;  // N x C x spatial...
  Shape w;  // C x M/group x kernel...
  Shape y;  // N x M x out...
  int64_t group = 1;
  TransposedWindow window;
  bool has_bias = false;
};

ConvTransposeSpec resolve(const Attributes& attrs, const Shape& x, const Shape& w, const Shape* bias) {
  const std::string op = "ConvTranspose";
  ConvTransposeSpec s;
  s.x = x;
  s.w = w;
  if (x.size() < 3) throw ShapeError(op + " input X " + shapeStr(x) + " must be N x C x spatial (rank >= 3)");
  if (w.size() != x.size())
    throw ShapeError(op + " W " + shapeStr(w) + " must have the rank of X " + shapeStr(x));
  s.group = attrs.i("group", 1);
  if (s.group < 1) throw ShapeError(op + " group must be >= 1, got " + std::to_string(s.group));
  if (x[1] != w[0]) {
    throw ShapeError(op + " input X " + shapeStr(x) + " has " + std::to_string(x[1]) + " channels but W " +
                     shapeStr(w) + " expects " + std::to_string(w[0]) + " (W is [C_in, C_out/group, k...])");
  }
  if (x[1] % s.group != 0) {
    throw ShapeError(op + " input channels " + std::to_string(x[1]) + " not divisible by group " +
                     std::to_string(s.group));
  }
  const int64_t out_channels = w[1] * s.group;
  if (bias) {
    if (*bias != Shape{out_channels}) {
      throw ShapeError(op + " bias " + shapeStr(*bias) + " must be [" + std::to_string(out_channels) + "]");
    }
    s.has_bias = true;
  }
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (attrs.has("kernel_shape") && attrs.ints("kernel_shape") != kernel) {
    throw ShapeError(op + " kernel_shape " + shapeStr(attrs.ints("kernel_shape")) + " disagrees with W " +
                     shapeStr(w));
  }
  s.window = transposedWindow(attrs, spatialDims(x), kernel, op);
  s.y = {x[0], out_channels};
  s.y.insert(s.y.end(), s.window.out.begin(), s.window.out.end());
  return s;
}

void inferConvTranspose(InferContext& ctx) {
  const Shape* bias = ctx.hasInput(kB) ? &ctx.inputShape(kB) : nullptr;
  const ConvTransposeSpec s = resolve(ctx.attrs(), ctx.inputShape(kX), ctx.inputShape(kW), bias);
  ctx.setOutput(0, ctx.inputDType(kX), s.y);
}

// The ONNX weight buffer [C, M/G, k...] seen with oneDNN's logical deconvolution dims
// [G, M/G, C/G, k...] (or [M, C, k...] when G == 1): only the strides differ from plain.
memory::desc onnxWeightsDesc(const ConvTransposeSpec& s, memory::dims* logical) {
  const int64_t g = s.group, c_per_g = s.w[0] / g, m_per_g = s.w[1];
  int64_t k = 1;
  for (size_t i = 2; i < s.w.size(); ++i) k *= s.w[i];
  const std::vector<int64_t> kernel_strides = shapeStrides(Shape(s.w.begin() + 2, s.w.end()));
  memory::dims dims, strides;
  if (g > 1) {
    dims.push_back(g);
    strides.push_back(c_per_g * m_per_g * k);
  }
  dims.insert(dims.end(), {m_per_g, c_per_g});
  strides.insert(strides.end(), {k, m_per_g * k});
  dims.insert(dims.end(), s.w.begin() + 2, s.w.end());
  strides.insert(strides.end(), kernel_strides.begin(), kernel_strides.end());
  *logical = dims;
  return memory::desc(dims, memory::data_type::f32, strides);
}

// Copies `inner` (a plain tensor no larger than `y` in any dim) into the leading corner of `y`
// and fills the cells it does not cover with the channel's bias (0 without bias): those output
// cells lie beyond every input's reach.
void expandWithBias(const Shape& inner, const float* src, const Shape& y, const float* bias, float* dst) {
  const int64_t channels = y[1], plane = shapeNumel(y) / (y[0] * channels);
  for (int64_t nc = 0; nc < y[0] * channels; ++nc) {
    const float v = bias ? bias[nc % channels] : 0.f;
    std::fill(dst + nc * plane, dst + (nc + 1) * plane, v);
  }
  const std::vector<int64_t> y_strides = shapeStrides(y);
  const int64_t row = inner.back(), rows = shapeNumel(inner) / row;
  std::vector<int64_t> idx(inner.size() - 1, 0);  // position over every dim but the last
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * y_strides[d];
    std::copy(src + r * row, src + (r + 1) * row, dst + off);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < inner[d]) break;
      idx[d] = 0;
    }
  }
}

class ConvTransposeKernel : public Kernel {
 public:
  ConvTransposeKernel(const ConvTransposeSpec& s, const KernelContext& ctx) : spec_(s), inner_y_(s.y) {
    memory::dims w_dims;
    const memory::desc user_w = onnxWeightsDesc(s, &w_dims);
    const Window& win = s.window;
    memory::dims dilations, pad_r;
    for (size_t i = 0; i < win.rank(); ++i) {
      dilations.push_back(win.dilations[i] - 1);  // oneDNN counts dilation from 0
      // oneDNN derives the output size as (in-1)*stride + extent - pad_l - pad_r, so output_padding
      // and output_shape show up as a smaller right pad. oneDNN refuses a negative one: those cells
      // are beyond every input's reach, so the primitive computes the shorter output and run()
      // extends it with the bias.
      const int64_t r = (s.x[2 + i] - 1) * win.strides[i] + win.extent(i) - win.pads_begin[i] - win.out[i];
      pad_r.push_back(std::max<int64_t>(r, 0));
      if (r < 0) inner_y_[2 + i] += r;
    }
    const auto any = memory::format_tag::any;
    const memory::desc any_x(toDims(s.x), memory::data_type::f32, any);
    const memory::desc any_y(toDims(inner_y_), memory::data_type::f32, any);
    const memory::desc any_w(w_dims, memory::data_type::f32, any);
    if (s.has_bias) b_desc_ = plainDesc({s.y[1]});
    const dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, any_x, any_w, b_desc_,
        any_y, toDims(win.strides), dilations, toDims(win.pads_begin), pad_r);
    const dnnl::deconvolution_forward::primitive_desc pd(desc, userScratchpadAttr(), cpuEngine());
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    src_ = LayoutAdapter(plainDesc(s.x), pd.src_desc(), ws_);
    dst_ = LayoutAdapter(plainDesc(inner_y_), pd.dst_desc(), ws_);
    if (inner_y_ != s.y) inner_offset_ = ws_.reserve(sizeof(float) * shapeNumel(inner_y_));
    const Tensor* w_const = ctx.constInput(kW);
    weights_ = PackedWeights(user_w, pd.weights_desc(), w_const ? w_const->raw() : nullptr, ws_);
    prim_ = dnnl::deconvolution_forward(pd);
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    void* ws = io.workspace;
    const bool expand = inner_y_ != spec_.y;
    void* y = expand ? WorkspaceLayout::at(ws, inner_offset_) : io.outputs[0].data;
    const void* bias = spec_.has_bias ? io.inputs[kB].data : nullptr;
    const memory dst = dst_.output(y, ws);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_.input(io.inputs[kX].data, ws)},
                                         {DNNL_ARG_WEIGHTS, weights_.get(io.inputs[kW].data, ws)},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratch_.get(ws)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, wrap(b_desc_, bias));
    execute(prim_, args);
    dst_.finishOutput(dst, y);
    if (expand) {
      expandWithBias(inner_y_, static_cast<const float*>(y), spec_.y, static_cast<const float*>(bias),
                     io.outputs[0].as<float>());
    }
  }

 private:
  ConvTransposeSpec spec_;
  Shape inner_y_;  // what the primitive produces: spec_.y minus the cells beyond every input's reach
  size_t inner_offset_ = 0;
  memory::desc b_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  LayoutAdapter src_, dst_;
  PackedWeights weights_;
  dnnl::deconvolution_forward prim_;
};

std::unique_ptr<Kernel> makeConvTranspose(const KernelContext& ctx) {
  const auto& in = ctx.input_types;
  const Shape* bias = in.size() > kB && in[kB].present() ? &in[kB].shape : nullptr;
  const ConvTransposeSpec spec = resolve(ctx.node.attrs(), in[kX].shape, in[kW].shape, bias);
  try {
    if (isPatchConvTranspose(spec.x, spec.w, spec.group, spec.window, spec.y)) {
      return makePatchConvTransposeKernel(spec.x, spec.w, spec.has_bias, ctx);
    }
    return std::make_unique<ConvTransposeKernel>(spec, ctx);
  } catch (const dnnl::error& e) {
    const Window& w = spec.window;
    throw UnsupportedOpError("ConvTranspose node '" + ctx.node.name() + "': oneDNN refused X " +
                             shapeStr(spec.x) + " W " + shapeStr(spec.w) + " -> Y " + shapeStr(spec.y) +
                             " strides " + shapeStr(w.strides) + " dilations " + shapeStr(w.dilations) +
                             " pads " + shapeStr(w.pads_begin) + "/" + shapeStr(w.pads_end) + ": " +
                             e.what());
  }
}

}  // namespace

void registerConvTransposeOps(OpRegistry& reg) {
  reg.add("ConvTranspose")
      .traits(OpTrait::SlidingWindow | OpTrait::WeightLinear | OpTrait::LearnedParameters)
      .quantClass(QuantClass::Float)
      .inputs(2, 3)
      .infer(inferConvTranspose)
      .kernel(makeConvTranspose)
      .types({DType::Float32})
      .doc("transposed convolution: groups, dilations, output_padding, output_shape, auto_pad; oneDNN");
}

}  // namespace npuc::nn
