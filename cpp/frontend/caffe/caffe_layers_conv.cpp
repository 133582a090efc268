// Convolution, Deconvolution, Pooling and InnerProduct: Caffe's windowed and fully connected
// layers as Conv / ConvTranspose / MaxPool / AveragePool / Gemm (or MatMul + Add).
#include <algorithm>

#include "frontend/caffe/caffe_layers.h"

namespace npuc::caffe {

namespace {

// One spatial parameter of Caffe's 2-D windows: the repeated form (one value for both dims, or
// one per dim) unless the explicit _h/_w pair is given.
struct HW {
  int64_t h, w;
};

HW pickHW(NetBuilder& b, const Layer& l, const google::protobuf::RepeatedField<uint32_t>& rep, bool has_h,
          uint32_t h, bool has_w, uint32_t w, int64_t def, const char* what) {
  if (has_h || has_w) {
    if (rep.size() > 0) b.fail(l, std::string("gives both ") + what + " and " + what + "_h/" + what + "_w");
    if (!(has_h && has_w)) b.fail(l, std::string("gives only one of ") + what + "_h and " + what + "_w");
    return {h, w};
  }
  if (rep.size() == 0) return {def, def};
  if (rep.size() == 1) return {rep.Get(0), rep.Get(0)};
  if (rep.size() > 2) {
    b.fail(l, std::string("has ") + std::to_string(rep.size()) + " " + what +
                  " values; npuc supports 2-D windows (1 or 2 values)");
  }
  return {rep.Get(0), rep.Get(1)};
}

struct ConvGeometry {
  HW kernel, stride, pad, dilation;
  int64_t group;
};

ConvGeometry convGeometry(NetBuilder& b, const Layer& l, const npuc_caffe::ConvolutionParameter& p) {
  ConvGeometry g{};
  g.kernel = pickHW(b, l, p.kernel_size(), p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(), p.kernel_w(), 0, "kernel");
  if (g.kernel.h <= 0 || g.kernel.w <= 0) b.fail(l, "has no kernel size (kernel_size or kernel_h/kernel_w)");
  g.stride = pickHW(b, l, p.stride(), p.has_stride_h(), p.stride_h(), p.has_stride_w(), p.stride_w(), 1, "stride");
  g.pad = pickHW(b, l, p.pad(), p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w(), 0, "pad");
  const auto& d = p.dilation();
  if (d.size() > 2) b.fail(l, "has more than 2 dilation values; npuc supports 2-D windows");
  g.dilation = d.size() == 0 ? HW{1, 1} : d.size() == 1 ? HW{d.Get(0), d.Get(0)} : HW{d.Get(0), d.Get(1)};
  if (g.stride.h <= 0 || g.stride.w <= 0 || g.dilation.h <= 0 || g.dilation.w <= 0) {
    b.fail(l, "stride and dilation must be positive");
  }
  g.group = p.group();
  if (g.group <= 0) b.fail(l, "group must be positive");
  if (p.axis() != 1) b.fail(l, "convolution_param.axis " + std::to_string(p.axis()) + " is not supported (only 1)");
  return g;
}

Attributes windowAttrs(const ConvGeometry& g) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{g.kernel.h, g.kernel.w});
  a.set("strides", std::vector<int64_t>{g.stride.h, g.stride.w});
  a.set("pads", std::vector<int64_t>{g.pad.h, g.pad.w, g.pad.h, g.pad.w});
  a.set("dilations", std::vector<int64_t>{g.dilation.h, g.dilation.w});
  a.set("group", g.group);
  return a;
}

// Shared by Convolution and Deconvolution, whose blobs differ only in the weight layout:
// Convolution [out, in/group, kh, kw], Deconvolution [in, out/group, kh, kw] (ConvTranspose's).
void convertConvLike(NetBuilder& b, const Layer& l, bool transposed) {
  b.expectArity(l, 1, 1, 1);
  const auto& p = l.convolution_param();
  Value* x = b.bottom(l, 0);
  if (x->rank() != 4) b.fail(l, "input has shape " + shapeStr(x->shape()) + "; npuc supports 2-D convolution (NCHW)");
  const ConvGeometry g = convGeometry(b, l, p);
  const int64_t cin = x->shape()[1];
  const int64_t cout = p.num_output();
  if (cout <= 0) b.fail(l, "num_output must be positive");
  if (cin % g.group != 0 || cout % g.group != 0) {
    b.fail(l, "group " + std::to_string(g.group) + " does not divide the input channels (" + std::to_string(cin) +
                  ") and num_output (" + std::to_string(cout) + ")");
  }
  const Shape wshape = transposed ? Shape{cin, cout / g.group, g.kernel.h, g.kernel.w}
                                  : Shape{cout, cin / g.group, g.kernel.h, g.kernel.w};
  std::vector<Value*> inputs{x, b.constant(l, b.blob(l, 0, wshape), "weight")};
  if (p.bias_term()) inputs.push_back(b.constant(l, b.blob(l, 1, {cout}), "bias"));
  Node* n = b.emit(l, transposed ? "ConvTranspose" : "Conv", inputs, windowAttrs(g));
  b.setTop(l, 0, n->output());
}

// Caffe's pooled size: ceil (default) or floor of the window count, and a last window that would
// start inside the end padding dropped, which Caffe only does when there is padding.
int64_t caffePooledSize(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (pad > 0 && (out - 1) * s >= in + pad) --out;
  return out;
}

}  // namespace

void convertConvolution(NetBuilder& b, const Layer& l) { convertConvLike(b, l, false); }
void convertDeconvolution(NetBuilder& b, const Layer& l) { convertConvLike(b, l, true); }

void convertPooling(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  const auto& p = l.pooling_param();
  Value* x = b.bottom(l, 0);
  if (x->rank() != 4) b.fail(l, "input has shape " + shapeStr(x->shape()) + "; npuc supports 2-D pooling (NCHW)");
  if (p.pool() == npuc_caffe::PoolingParameter::STOCHASTIC) b.fail(l, "STOCHASTIC pooling is not supported");
  const bool is_max = p.pool() == npuc_caffe::PoolingParameter::MAX;
  if (p.global_pooling()) {
    Node* n = b.emit(l, is_max ? "GlobalMaxPool" : "GlobalAveragePool", {x});
    b.setTop(l, 0, n->output());
    return;
  }
  const HW k = p.has_kernel_h() || p.has_kernel_w()
                   ? HW{p.kernel_h(), p.kernel_w()}
                   : HW{p.kernel_size(), p.kernel_size()};
  if (k.h <= 0 || k.w <= 0) b.fail(l, "has no kernel size (kernel_size or kernel_h/kernel_w, or global_pooling)");
  const HW s = p.has_stride_h() || p.has_stride_w() ? HW{p.stride_h(), p.stride_w()} : HW{p.stride(), p.stride()};
  if (s.h <= 0 || s.w <= 0) b.fail(l, "stride must be positive");
  const HW pad = p.has_pad_h() || p.has_pad_w() ? HW{p.pad_h(), p.pad_w()} : HW{p.pad(), p.pad()};
  if (pad.h >= k.h || pad.w >= k.w) b.fail(l, "pad must be smaller than the kernel");
  const bool ceil_mode = p.round_mode() == npuc_caffe::PoolingParameter::CEIL;
  const int64_t H = x->shape()[2], W = x->shape()[3];
  const Shape want{x->shape()[0], x->shape()[1], caffePooledSize(H, k.h, s.h, pad.h, ceil_mode),
                   caffePooledSize(W, k.w, s.w, pad.w, ceil_mode)};
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k.h, k.w});
  a.set("strides", std::vector<int64_t>{s.h, s.w});
  a.set("pads", std::vector<int64_t>{pad.h, pad.w, pad.h, pad.w});
  a.set("ceil_mode", int64_t{ceil_mode ? 1 : 0});
  // Caffe's average divides by the window clipped to input + pads (padding counts, the ceil
  // overhang does not): ONNX's count_include_pad=1 with ceil_mode, as npuc implements it.
  if (!is_max) a.set("count_include_pad", int64_t{1});
  Node* n = b.emit(l, is_max ? "MaxPool" : "AveragePool", {x}, std::move(a));
  if (n->output()->shape() != want) {
    // Only with pad 0 and a stride beyond the kernel: Caffe then keeps a window npuc drops.
    b.fail(l, "Caffe's output shape " + shapeStr(want) + " differs from the pooling npuc computes " +
                  shapeStr(n->output()->shape()) + " (a stride larger than the kernel without padding)");
  }
  b.setTop(l, 0, n->output());
}

void convertInnerProduct(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  const auto& p = l.inner_product_param();
  Value* x = b.bottom(l, 0);
  const Shape& in = x->shape();
  const int64_t axis = caffeAxis(b, l, p.axis(), x->rank(), "inner_product_param.axis");
  const int64_t k = b.checkedNumel(l, Shape(in.begin() + axis, in.end()));
  const int64_t n_out = p.num_output();
  if (n_out <= 0) b.fail(l, "num_output must be positive");
  // transpose=false stores W as [N, K] (y = x W^T), transpose=true as [K, N] (y = x W).
  Tensor w = b.blob(l, 0, p.transpose() ? Shape{k, n_out} : Shape{n_out, k});
  Value* bias = p.bias_term() ? b.constant(l, b.blob(l, 1, {n_out}), "bias") : nullptr;
  if (axis == 1) {
    // The common form: flatten everything after the batch, one Gemm.
    if (x->rank() != 2) {
      Attributes fa;
      fa.set("axis", int64_t{1});
      x = b.emit(l, "Flatten", {x}, std::move(fa), "flatten")->output();
    }
    Attributes ga;
    ga.set("transB", int64_t{p.transpose() ? 0 : 1});
    std::vector<Value*> inputs{x, b.constant(l, std::move(w), "weight")};
    if (bias) inputs.push_back(bias);
    b.setTop(l, 0, b.emit(l, "Gemm", inputs, std::move(ga))->output());
    return;
  }
  // Leading dims kept: reshape to [lead..., K], MatMul with W as [K, N], add the bias.
  std::vector<int64_t> shape(in.begin(), in.begin() + axis);
  shape.push_back(k);
  std::fill(shape.begin(), shape.begin() + axis, 0);  // 0 copies the dim (batch-size agnostic)
  Value* flat = b.emit(l, "Reshape", {x, int64Const(b, l, shape, "shape")}, {}, "reshape")->output();
  if (!p.transpose()) {
    Tensor wt(DType::Float32, {k, n_out});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t r = 0; r < n_out; ++r)
      for (int64_t c = 0; c < k; ++c) dst[c * n_out + r] = src[r * k + c];
    w = std::move(wt);
  }
  Value* y = b.emit(l, "MatMul", {flat, b.constant(l, std::move(w), "weight")}, {}, bias ? "matmul" : "")->output();
  if (bias) y = b.emit(l, "Add", {y, bias})->output();
  b.setTop(l, 0, y);
}

}  // namespace npuc::caffe
