// Conv and npuc's fused ConvAct: schema, shape inference, kernel selection.
#include "opset/ops/nn_conv_kernel.h"
#include "opset/ops/nn_ops.h"

namespace npuc::nn {

namespace {

std::string dimStr(int64_t d) {
  return std::to_string(d);
}

// Kernel sizes come from the weights; a kernel_shape attribute, if present, must agree.
std::vector<int64_t> convKernel(const Attributes& attrs, const Shape& w, const std::string& op) {
  std::vector<int64_t> k(w.begin() + 2, w.end());
  if (attrs.has("kernel_shape") && attrs.ints("kernel_shape") != k) {
    throw ShapeError(op + " kernel_shape " + shapeStr(attrs.ints("kernel_shape")) + " disagrees with W " +
                     shapeStr(w));
  }
  return k;
}

// ConvAct's x_layout / y_layout: "NHWC" (channels-last storage, 2-D only) or "NCHW" (the default).
bool channelsLast(const Attributes& attrs, const char* name, size_t rank) {
  const std::string layout = attrs.s(name, "NCHW");
  if (layout == "NCHW") return false;
  if (layout != "NHWC")
    throw ShapeError(std::string("ConvAct ") + name + " must be NCHW or NHWC, got '" + layout + "'");
  if (rank != 4) throw ShapeError(std::string("ConvAct ") + name + " NHWC needs a 2-D convolution (rank 4)");
  return true;
}

}  // namespace

ConvSpec resolveConv(const Attributes& attrs, const Shape& x, const Shape& w, const Shape* bias,
                     const Shape* sum, const std::string& op) {
  ConvSpec s;
  s.x = x;
  s.w = w;
  if (x.size() < 3) throw ShapeError(op + " input X " + shapeStr(x) + " must be N x C x spatial (rank >= 3)");
  if (w.size() != x.size()) {
    throw ShapeError(op + " W " + shapeStr(w) + " must have the rank of X " + shapeStr(x));
  }
  s.group = attrs.i("group", 1);
  if (s.group < 1) throw ShapeError(op + " group must be >= 1, got " + dimStr(s.group));
  if (x[1] != w[1] * s.group) {
    throw ShapeError(op + " input X " + shapeStr(x) + " has " + dimStr(x[1]) + " channels but W " +
                     shapeStr(w) + " with group " + dimStr(s.group) + " expects " + dimStr(w[1] * s.group));
  }
  if (w[0] % s.group != 0) {
    throw ShapeError(op + " W " + shapeStr(w) + " has " + dimStr(w[0]) +
                     " output channels, not divisible by group " + dimStr(s.group));
  }
  if (bias) {
    if (*bias != Shape{w[0]}) {
      throw ShapeError(op + " bias " + shapeStr(*bias) + " must be [" + dimStr(w[0]) +
                       "] (W's output channels)");
    }
    s.has_bias = true;
  }
  s.window = forwardWindow(attrs, spatialDims(x), convKernel(attrs, w, op), /*ceil_mode=*/false, op);
  s.y = {x[0], w[0]};
  s.y.insert(s.y.end(), s.window.out.begin(), s.window.out.end());
  if (sum) {
    if (*sum != s.y) {
      throw ShapeError(op + " Sum input " + shapeStr(*sum) + " must have the conv output shape " +
                       shapeStr(s.y));
    }
    s.has_sum = true;
  }
  return s;
}

namespace {

// Conv and ConvAct share everything but the Sum input and the activation.
ConvSpec specFromInfer(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape* bias = ctx.hasInput(kConvB) ? &ctx.inputShape(kConvB) : nullptr;
  const Shape* sum = ctx.hasInput(kConvSum) ? &ctx.inputShape(kConvSum) : nullptr;
  return resolveConv(n.attrs(), ctx.inputShape(kConvX), ctx.inputShape(kConvW), bias, sum, n.opType());
}

void inferConv(InferContext& ctx) {
  if (ctx.node().opType() == "ConvAct") {  // refuse unknown names early
    parseActivation(ctx.attrs());
    channelsLast(ctx.attrs(), "x_layout", ctx.inputShape(kConvX).size());
    channelsLast(ctx.attrs(), "y_layout", ctx.inputShape(kConvX).size());
  }
  ctx.setOutput(0, ctx.inputDType(kConvX), specFromInfer(ctx).y);
}

std::unique_ptr<Kernel> makeConv(const KernelContext& ctx) {
  const auto& in = ctx.input_types;
  auto present = [&](size_t i) { return i < in.size() && in[i].present(); };
  const Shape* bias = present(kConvB) ? &in[kConvB].shape : nullptr;
  const Shape* sum = present(kConvSum) ? &in[kConvSum].shape : nullptr;
  ConvSpec spec =
      resolveConv(ctx.node.attrs(), in[kConvX].shape, in[kConvW].shape, bias, sum, ctx.node.opType());
  if (ctx.node.opType() == "ConvAct") {
    spec.act = parseActivation(ctx.node.attrs());
    spec.x_nhwc = channelsLast(ctx.node.attrs(), "x_layout", spec.x.size());
    spec.y_nhwc = channelsLast(ctx.node.attrs(), "y_layout", spec.x.size());
  }
  return makeConvKernel(spec, ctx);
}

}  // namespace

void registerConvOps(OpRegistry& reg) {
  reg.add("Conv")
      .traits(OpTrait::SlidingWindow | OpTrait::MacGeometry | OpTrait::WeightLinear |
              OpTrait::LearnedParameters)
      .quantClass(QuantClass::Mac)
      .inputs(2, 3)
      .infer(inferConv)
      .kernel(makeConv)
      .types({DType::Float32})
      .doc("N-D convolution (1-D to 3-D): groups, dilations, auto_pad; oneDNN kernels");
  reg.add("ConvAct", kNpucDomain)
      .quantClass(QuantClass::Float)
      .inputs(2, 4)
      .infer(inferConv)
      .kernel(makeConv)
      .types({DType::Float32})
      .doc(
          "activation(Conv(X, W, B) + Sum): host fusion of Conv(+Add)(+activation) into oneDNN post-ops; "
          "x_layout / y_layout NHWC: X, or Y and Sum, stored channels-last (host runtime regions)");
}

}  // namespace npuc::nn
