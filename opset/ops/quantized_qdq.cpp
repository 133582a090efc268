// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: the ONNX conversions between float
// and integer tensors (opset 10 per-tensor, opset 13 per-axis `axis`; opset 19's `saturate` only
// concerns float8 types, which npuc does not hold, so integer outputs always saturate).
//   Quantize:   y = saturate(round_half_to_even(x / scale) + zero_point)
//   Dequantize: y = (x - zero_point) * scale, the difference taken in int32, then one float multiply
// Both are what ONNX Runtime's kernels compute, so results match it bit for bit.
#include <algorithm>

#include "opset/ops/quantized_ops.h"

namespace npuc::qops {
namespace {

// Opset 21's blocked quantization (block_size) is refused by name rather than read as per-axis.
void refuseBlocked(const InferContext& ctx) {
  if (ctx.attrs().i("block_size", 0) != 0) {
    throw UnsupportedOpError(
        ctx.node().opType() + " with block_size " + std::to_string(ctx.attrs().i("block_size")) +
        " (opset 21 blocked quantization) is not supported; per-tensor and per-axis are");
  }
}

// ---------------------------------------------------------------- QuantizeLinear

// The output type: the zero point's, else opset 21's output_dtype attribute, else uint8.
DType quantizeOutputType(const InferContext& ctx) {
  const int64_t attr = ctx.attrs().i("output_dtype", 0);
  const DType from_attr = attr != 0 ? dtypeFromOnnx(static_cast<int32_t>(attr)) : DType::Undefined;
  if (attr != 0 && from_attr == DType::Undefined) {
    throw ShapeError(
        "QuantizeLinear output_dtype " + std::to_string(attr) +
        " (an ONNX type code: int4, float8, ...) is not supported; uint8, int8, uint16 and int16 are");
  }
  if (!ctx.hasInput(2)) return from_attr == DType::Undefined ? DType::UInt8 : from_attr;
  const DType zp = ctx.inputDType(2);
  if (from_attr != DType::Undefined && from_attr != zp) {
    throw ShapeError(std::string("QuantizeLinear output_dtype ") + dtypeName(from_attr) +
                     " disagrees with y_zero_point's type " + dtypeName(zp));
  }
  return zp;
}

void inferQuantize(InferContext& ctx) {
  refuseBlocked(ctx);
  const Shape& x = ctx.inputShape(0);
  const Shape* zp = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  resolveParams("QuantizeLinear", x, ctx.attrs().i("axis", 1), ctx.inputShape(1), zp);
  const DType out = quantizeOutputType(ctx);
  quantRange(out, "QuantizeLinear output (y_zero_point / output_dtype)");
  ctx.setOutput(0, out, x);
}

class QuantizeKernel : public Kernel {
 public:
  explicit QuantizeKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_zp_ = in.size() > 2 && in[2].present();
    params_ = resolveParams("QuantizeLinear", in[0].shape, ctx.node.attrs().i("axis", 1), in[1].shape,
                            has_zp_ ? &in[2].shape : nullptr);
    range_ = quantRange(ctx.output_types[0].dtype, "QuantizeLinear y_zero_point");
  }
  void run(const KernelIO& io) const override {
    const TensorView& x = io.inputs[0];
    const int64_t n = x.numel();
    const float* xs = x.as<const float>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = params_(i);
      const int32_t zp = has_zp_ ? intAt(io.inputs[2], c) : 0;
      storeInt(io.outputs[0], i, quantizeValue(xs[i] / floatAt(io.inputs[1], c), zp, range_));
    }
  }

 private:
  ParamIndex params_;
  QRange range_;
  bool has_zp_ = false;
};

// ---------------------------------------------------------------- DequantizeLinear

void inferDequantize(InferContext& ctx) {
  refuseBlocked(ctx);
  const Shape& x = ctx.inputShape(0);
  const Shape* zp = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  resolveParams("DequantizeLinear", x, ctx.attrs().i("axis", 1), ctx.inputShape(1), zp);
  if (zp && ctx.inputDType(2) != ctx.inputDType(0)) {
    throw ShapeError(std::string("DequantizeLinear x_zero_point is ") + dtypeName(ctx.inputDType(2)) +
                     " but x is " + dtypeName(ctx.inputDType(0)) + "; they must match");
  }
  ctx.setOutput(0, DType::Float32, x);
}

class DequantizeKernel : public Kernel {
 public:
  explicit DequantizeKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_zp_ = in.size() > 2 && in[2].present();
    params_ = resolveParams("DequantizeLinear", in[0].shape, ctx.node.attrs().i("axis", 1), in[1].shape,
                            has_zp_ ? &in[2].shape : nullptr);
  }
  void run(const KernelIO& io) const override {
    const TensorView& x = io.inputs[0];
    const int64_t n = x.numel();
    float* y = io.outputs[0].as<float>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = params_(i);
      const int32_t zp = has_zp_ ? intAt(io.inputs[2], c) : 0;
      y[i] = static_cast<float>(intAt(x, i) - zp) * floatAt(io.inputs[1], c);
    }
  }

 private:
  ParamIndex params_;
  bool has_zp_ = false;
};

// ---------------------------------------------------------------- DynamicQuantizeLinear

void inferDynamicQuantize(InferContext& ctx) {
  ctx.setOutput(0, DType::UInt8, ctx.inputShape(0));
  ctx.setOutput(1, DType::Float32, {});
  ctx.setOutput(2, DType::UInt8, {});
}

// uint8 with scale (max - min) / 255 over the range of x widened to hold 0. A constant x (all one
// value, so an empty range once 0 is included) gets scale 1 as in ONNX Runtime; the spec's formula
// would divide by zero.
class DynamicQuantizeKernel : public Kernel {
 public:
  void run(const KernelIO& io) const override {
    const TensorView& x = io.inputs[0];
    const int64_t n = x.numel();
    const float* xs = x.as<const float>();
    float lo = 0.f, hi = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, xs[i]);
      hi = std::max(hi, xs[i]);
    }
    const QRange r{0, 255};
    const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
    const float initial_zp = std::clamp(0.f - lo / scale, 0.f, 255.f);
    const int32_t zp = static_cast<int32_t>(std::nearbyint(initial_zp));
    uint8_t* y = io.outputs[0].as<uint8_t>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(quantizeValue(xs[i] / scale, zp, r));
    *io.outputs[1].as<float>() = scale;
    *io.outputs[2].as<uint8_t>() = static_cast<uint8_t>(zp);
  }
};

// Q/DQ stay on the host: on the NPU x / scale and the rounding would be computed in float16 and
// no longer match ONNX Runtime's float32 bit for bit, and a QDQ pair's real job, fixing the int8
// grid of the tensor between them, belongs to the import (#17), not to a kernel.
const char* kQdqCpuReason =
    "it converts between float and integer tensors (a QDQ model's fake-quant); the int8 grid it fixes is "
    "for load_onnx to fold into the NPU's own (#17)";

}  // namespace

void registerQdqOps(OpRegistry& reg) {
  reg.add("QuantizeLinear")
      .quantClass(QuantClass::Float)
      .cpuOnly(kQdqCpuReason)
      .since(13)
      .inputs(2, 3)
      .infer(inferQuantize)
      .kernel([](const KernelContext& c) { return std::make_unique<QuantizeKernel>(c); })
      .types({DType::Float32})
      .doc("saturate(round_half_even(x / scale) + zero_point) to uint8/int8(/16), per tensor or per `axis`");
  reg.add("DequantizeLinear")
      .quantClass(QuantClass::Float)
      .cpuOnly(kQdqCpuReason)
      .since(13)
      .inputs(2, 3)
      .infer(inferDequantize)
      .kernel([](const KernelContext& c) { return std::make_unique<DequantizeKernel>(c); })
      .types({DType::UInt8, DType::Int8, DType::UInt16, DType::Int16, DType::Int32})
      .doc("(x - zero_point) * scale to float32 from uint8/int8/int32, per tensor or per `axis`");
  reg.add("DynamicQuantizeLinear")
      .quantClass(QuantClass::Float)
      .cpuOnly("its scale and zero point come from the data's min/max at run time")
      .since(11)
      .inputs(1)
      .outputs(3)
      .infer(inferDynamicQuantize)
      .kernel([](const KernelContext&) { return std::make_unique<DynamicQuantizeKernel>(); })
      .types({DType::Float32})
      .doc("(y uint8, scale, zero_point) from x's range widened to include 0; scale 1 for a constant x");
}

}  // namespace npuc::qops
