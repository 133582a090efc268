// QLinearConv and QLinearMatMul: integer operands with scales and zero points, exact int32 sums
// (plus QLinearConv's int32 bias), then requantized to the output's grid as ONNX Runtime does it:
//   y = saturate(round_half_to_even(float(acc) * (a_scale * b_scale[c] / y_scale)) + y_zero_point)
// with the multiplier computed in float in that order. Weight scales/zero points: one value, or
// one per output channel (QLinearConv: M) / per column (QLinearMatMul: N).
#include <algorithm>

#include "opset/ops/quantized_mac.h"

namespace npuc::qops {
namespace {

enum QInput : size_t { kA = 0, kAScale, kAZp, kB, kBScale, kBZp, kYScale, kYZp, kBias };

bool present(const KernelContext& ctx, size_t i) {
  return i < ctx.input_types.size() && ctx.input_types[i].present();
}

// Types and the per-tensor parameters both ops share; returns the output type.
DType checkQLinear(const InferContext& ctx, int64_t b_channels) {
  const std::string op = ctx.node().opType();
  for (size_t i : {kA, kB}) quantRange(ctx.inputDType(i), op + (i == kA ? " input A/x" : " input B/w"));
  for (size_t i : {kAScale, kBScale, kYScale}) {
    if (ctx.inputDType(i) != DType::Float32) {
      throw ShapeError(op + " scale input " + std::to_string(i) + " must be float32, got " +
                       dtypeName(ctx.inputDType(i)));
    }
  }
  for (auto [zp, operand] : {std::pair<size_t, size_t>{kAZp, kA}, {kBZp, kB}}) {
    if (ctx.hasInput(zp) && ctx.inputDType(zp) != ctx.inputDType(operand)) {
      throw ShapeError(op + " zero point input " + std::to_string(zp) + " is " +
                       dtypeName(ctx.inputDType(zp)) + " but its operand is " +
                       dtypeName(ctx.inputDType(operand)));
    }
  }
  checkChannelParam(op, "a/x scale", ctx.inputShape(kAScale), 1);
  checkChannelParam(op, "y scale", ctx.inputShape(kYScale), 1);
  checkChannelParam(op, "b/w scale", ctx.inputShape(kBScale), b_channels);
  if (ctx.hasInput(kAZp)) checkChannelParam(op, "a/x zero point", ctx.inputShape(kAZp), 1);
  if (ctx.hasInput(kBZp)) checkChannelParam(op, "b/w zero point", ctx.inputShape(kBZp), b_channels);
  if (!ctx.hasInput(kYZp)) return DType::UInt8;
  checkChannelParam(op, "y zero point", ctx.inputShape(kYZp), 1);
  const DType out = ctx.inputDType(kYZp);
  quantRange(out, op + " y_zero_point");
  return out;
}

// Requantizes acc (channel of element i: ch(i)) into the output tensor.
template <typename ChannelOf>
void requantize(const KernelIO& io, const int32_t* acc, int64_t n, ChannelOf ch, bool has_yzp, QRange r) {
  const TensorView& y = io.outputs[0];
  const float a_scale = floatAt(io.inputs[kAScale], 0), y_scale = floatAt(io.inputs[kYScale], 0);
  const int32_t y_zp = has_yzp ? intAt(io.inputs[kYZp], 0) : 0;
  const bool per_channel = io.inputs[kBScale].numel() > 1;
  for (int64_t i = 0; i < n; ++i) {
    const float multiplier = a_scale * floatAt(io.inputs[kBScale], per_channel ? ch(i) : 0) / y_scale;
    storeInt(y, i, quantizeValue(static_cast<float>(acc[i]) * multiplier, y_zp, r));
  }
}

// ---------------------------------------------------------------- QLinearConv

nn::ConvSpec qconvSpec(const Attributes& attrs, const Shape& x, const Shape& w, const Shape* bias) {
  return nn::resolveConv(attrs, x, w, bias, nullptr, "QLinearConv");
}

void inferQLinearConv(InferContext& ctx) {
  const Shape* bias = ctx.hasInput(kBias) ? &ctx.inputShape(kBias) : nullptr;
  if (bias && ctx.inputDType(kBias) != DType::Int32) {
    throw ShapeError(std::string("QLinearConv bias must be int32, got ") + dtypeName(ctx.inputDType(kBias)));
  }
  const nn::ConvSpec s = qconvSpec(ctx.attrs(), ctx.inputShape(kA), ctx.inputShape(kB), bias);
  ctx.setOutput(0, checkQLinear(ctx, s.w[0]), s.y);
}

class QLinearConvKernel : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_bias_ = present(ctx, kBias);
    has_azp_ = present(ctx, kAZp);
    has_bzp_ = present(ctx, kBZp);
    has_yzp_ = present(ctx, kYZp);
    spec_ = qconvSpec(ctx.node.attrs(), in[kA].shape, in[kB].shape, has_bias_ ? &in[kBias].shape : nullptr);
    x_n_ = in[kA].numel();
    w_n_ = in[kB].numel();
    y_n_ = shapeNumel(spec_.y);
    if (has_bzp_ && in[kBZp].numel() > 1) w_idx_ = {spec_.w[0], w_n_ / spec_.w[0]};
    plane_ = std::max<int64_t>(1, y_n_ / std::max<int64_t>(1, spec_.y[0] * spec_.y[1]));  // empty outputs
    range_ = quantRange(ctx.output_types[0].dtype, "QLinearConv output");
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(x_n_ + w_n_ + y_n_) * sizeof(int32_t); }
  void run(const KernelIO& io) const override {
    int32_t* x = static_cast<int32_t*>(io.workspace);
    int32_t* w = x + x_n_;
    int32_t* acc = w + w_n_;
    subtractZeroPoint(io.inputs[kA], has_azp_ ? &io.inputs[kAZp] : nullptr, {}, x);
    subtractZeroPoint(io.inputs[kB], has_bzp_ ? &io.inputs[kBZp] : nullptr, w_idx_, w);
    intConv(spec_, x, w, acc);
    const int64_t m_out = spec_.y[1], plane = plane_;
    auto channel = [m_out, plane](int64_t i) { return (i / plane) % m_out; };
    if (has_bias_) {
      const int32_t* b = io.inputs[kBias].as<const int32_t>();
      for (int64_t i = 0; i < y_n_; ++i)
        acc[i] = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(b[channel(i)]));
    }
    requantize(io, acc, y_n_, channel, has_yzp_, range_);
  }

 private:
  nn::ConvSpec spec_;
  int64_t x_n_ = 0, w_n_ = 0, y_n_ = 0, plane_ = 1;
  bool has_bias_ = false, has_azp_ = false, has_bzp_ = false, has_yzp_ = false;
  ParamIndex w_idx_;
  QRange range_;
};

// ---------------------------------------------------------------- QLinearMatMul

void inferQLinearMatMul(InferContext& ctx) {
  const IntMatMulSpec s = resolveIntMatMul("QLinearMatMul", ctx.inputShape(kA), ctx.inputShape(kB));
  ctx.setOutput(0, checkQLinear(ctx, s.n), s.out);
}

class QLinearMatMulKernel : public Kernel {
 public:
  explicit QLinearMatMulKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_azp_ = present(ctx, kAZp);
    has_bzp_ = present(ctx, kBZp);
    has_yzp_ = present(ctx, kYZp);
    spec_ = resolveIntMatMul("QLinearMatMul", in[kA].shape, in[kB].shape);
    a_n_ = in[kA].numel();
    b_n_ = in[kB].numel();
    y_n_ = shapeNumel(spec_.out);
    if (has_bzp_ && in[kBZp].numel() > 1) b_idx_ = {spec_.n, 1};
    range_ = quantRange(ctx.output_types[0].dtype, "QLinearMatMul output");
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(a_n_ + b_n_ + y_n_) * sizeof(int32_t); }
  void run(const KernelIO& io) const override {
    int32_t* a = static_cast<int32_t*>(io.workspace);
    int32_t* b = a + a_n_;
    int32_t* acc = b + b_n_;
    subtractZeroPoint(io.inputs[kA], has_azp_ ? &io.inputs[kAZp] : nullptr, {}, a);
    subtractZeroPoint(io.inputs[kB], has_bzp_ ? &io.inputs[kBZp] : nullptr, b_idx_, b);
    intMatMul(spec_, a, b, acc);
    const int64_t n = spec_.n;
    requantize(
        io, acc, y_n_, [n](int64_t i) { return i % n; }, has_yzp_, range_);
  }

 private:
  IntMatMulSpec spec_;
  int64_t a_n_ = 0, b_n_ = 0, y_n_ = 0;
  bool has_azp_ = false, has_bzp_ = false, has_yzp_ = false;
  ParamIndex b_idx_;
  QRange range_;
};

const char* kQLinearCpuReason =
    "fold_qlinear rewrites it into DequantizeLinear -> Conv/MatMul -> QuantizeLinear so the NPU runs the "
    "float Conv/MatMul; one left over (a bias with non-constant scales) computes uint8/int8 zero-point "
    "arithmetic the NPU has no kernel for";

}  // namespace

void registerQLinearOps(OpRegistry& reg) {
  reg.add("QLinearConv")
      .quantClass(QuantClass::Float)
      .cpuOnly(kQLinearCpuReason)
      .since(10)
      .inputs(8, 9)
      .infer(inferQLinearConv)
      .kernel([](const KernelContext& c) { return std::make_unique<QLinearConvKernel>(c); })
      .types({DType::UInt8, DType::Int8})
      .doc(
          "integer conv + int32 bias, requantized with x_scale * w_scale[m] / y_scale (ONNX Runtime's "
          "rounding)");
  reg.add("QLinearMatMul")
      .quantClass(QuantClass::Float)
      .cpuOnly(kQLinearCpuReason)
      .since(10)
      .inputs(8)
      .infer(inferQLinearMatMul)
      .kernel([](const KernelContext& c) { return std::make_unique<QLinearMatMulKernel>(c); })
      .types({DType::UInt8, DType::Int8})
      .doc("integer matmul requantized with a_scale * b_scale[n] / y_scale (ONNX Runtime's rounding)");
}

}  // namespace npuc::qops
