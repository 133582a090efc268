// npuc's own ops (domain ai.npuc). The graph passes fuse ONNX sub-graphs into them so the NPU
// lowering and the host executor each see one op instead of a chain of elementwise nodes.
//   Gelu(X; approximate)      "none": 0.5 * x * (1 + erf(x / sqrt(2)))
//                             "tanh": 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//   SiLU(X)                   x * sigmoid(x)
//   GLU(X; axis = -1)         split X in halves a, b along axis: a * sigmoid(b)
//   RMSNorm(X, scale; axis = -1, epsilon = 1e-5)
//                             x / sqrt(mean(x^2 over dims axis..last) + epsilon) * scale
#include <array>
#include <cmath>
#include <string>

#include "opset/gelu.h"
#include "opset/ops/ew_axis.h"
#include "opset/ops/ew_math.h"
#include "opset/ops/ew_unary.h"

namespace npuc {
namespace ew {
namespace {

// ---------------------------------------------------------------- Gelu, SiLU

struct GeluErfFn {
  float operator()(float x) const {
    constexpr float kInvSqrt2 = static_cast<float>(kGeluInvSqrt2);
    return 0.5f * x * fastOnePlusErf(x * kInvSqrt2);
  }
};
struct GeluTanhFn {
  float operator()(float x) const {
    constexpr float kSqrt2OverPi = static_cast<float>(kGeluSqrt2OverPi);
    constexpr float kCubic = static_cast<float>(kGeluCubic);
    return 0.5f * x * (1.0f + fastTanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
  }
};
struct SiLUFn {
  float operator()(float x) const { return x * fastSigmoid(x); }
};

std::unique_ptr<Kernel> makeGelu(const KernelContext& ctx) {
  const std::string mode = ctx.node.attrs().s("approximate", "none");
  if (mode == "none") return std::make_unique<FloatUnaryKernel<GeluErfFn>>(ctx, GeluErfFn{});
  if (mode == "tanh") return std::make_unique<FloatUnaryKernel<GeluTanhFn>>(ctx, GeluTanhFn{});
  throw UnsupportedOpError("Gelu approximate='" + mode + "' is not supported (use \"none\" or \"tanh\")");
}

// ---------------------------------------------------------------- GLU

int64_t gluAxis(const Attributes& attrs, int64_t rank) {
  return normalizeAxis(attrs.i("axis", -1), rank, "GLU axis");
}

void inferGlu(InferContext& ctx) {
  Shape shape = ctx.inputShape(0);
  const int64_t axis = gluAxis(ctx.attrs(), static_cast<int64_t>(shape.size()));
  if (shape[axis] % 2 != 0) {
    throw ShapeError("GLU axis " + std::to_string(axis) + " of shape " + shapeStr(shape) + " has odd size " +
                     std::to_string(shape[axis]) + "; it must split in two halves");
  }
  shape[axis] /= 2;
  ctx.setOutput(0, ctx.inputDType(0), shape);
}

// In the [outer, len, inner] view each outer block holds a (first half) then b (second half),
// each half * inner contiguous floats, and the output block is half * inner floats.
class GluKernel : public Kernel {
 public:
  explicit GluKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types.at(0).shape;
    const AxisSplit s = splitAtAxis(in, gluAxis(ctx.node.attrs(), static_cast<int64_t>(in.size())));
    outer_ = s.outer;
    half_block_ = s.len / 2 * s.inner;
  }
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t o = 0; o < outer_; ++o) {
      const float* a = x + 2 * o * half_block_;
      const float* b = a + half_block_;
      float* out = y + o * half_block_;
      for (int64_t j = 0; j < half_block_; ++j) out[j] = a[j] * fastSigmoid(b[j]);
    }
  }

 private:
  int64_t outer_ = 1;
  int64_t half_block_ = 0;
};

// ---------------------------------------------------------------- RMSNorm

int64_t rmsAxis(const Attributes& attrs, int64_t rank) {
  return normalizeAxis(attrs.i("axis", -1), rank, "RMSNorm axis");
}

// scale must be one value or have the normalized dims' shape (leading 1s allowed).
void inferRmsNorm(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  const Shape& scale = ctx.inputShape(1);
  const int64_t axis = rmsAxis(ctx.attrs(), static_cast<int64_t>(x.size()));
  const Shape normalized(x.begin() + axis, x.end());
  Shape trimmed = scale;
  while (trimmed.size() > normalized.size() && trimmed.front() == 1) trimmed.erase(trimmed.begin());
  if (shapeNumel(scale) != 1 && trimmed != normalized) {
    throw ShapeError("RMSNorm scale of shape " + shapeStr(scale) + " does not match the normalized dims " +
                     shapeStr(normalized) + " of X " + shapeStr(x));
  }
  if (ctx.inputDType(1) != ctx.inputDType(0)) {
    throw ShapeError(std::string("RMSNorm scale has dtype ") + dtypeName(ctx.inputDType(1)) + " but X has " +
                     dtypeName(ctx.inputDType(0)));
  }
  inferSameAsInput0(ctx);
}

class RmsNormKernel : public Kernel {
 public:
  explicit RmsNormKernel(const KernelContext& ctx) : eps_(ctx.node.attrs().f("epsilon", 1e-5f)) {
    const Shape& in = ctx.input_types.at(0).shape;
    const int64_t axis = rmsAxis(ctx.node.attrs(), static_cast<int64_t>(in.size()));
    const int64_t numel = shapeNumel(in);
    n_ = shapeNumel(Shape(in.begin() + axis, in.end()));
    rows_ = n_ == 0 ? 0 : numel / n_;
    scalar_scale_ = ctx.input_types.at(1).numel() == 1;
  }
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    const float* scale = io.inputs[1].as<const float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t r = 0; r < rows_; ++r) {
      const float* xr = x + r * n_;
      float* yr = y + r * n_;
      const float inv = 1.0f / std::sqrt(sumOfSquares(xr) / static_cast<float>(n_) + eps_);
      if (scalar_scale_) {
        const float s = inv * scale[0];
        for (int64_t i = 0; i < n_; ++i) yr[i] = xr[i] * s;
      } else {
        for (int64_t i = 0; i < n_; ++i) yr[i] = xr[i] * inv * scale[i];
      }
    }
  }

 private:
  // Eight independent partial sums so the loop vectorizes.
  float sumOfSquares(const float* x) const {
    constexpr int64_t kLanes = 8;
    std::array<float, kLanes> lane{};
    int64_t i = 0;
    for (; i + kLanes <= n_; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lane[j] += x[i + j] * x[i + j];
    }
    float sum = 0.0f;
    for (float v : lane) sum += v;
    for (; i < n_; ++i) sum += x[i] * x[i];
    return sum;
  }

  float eps_;
  int64_t n_ = 1, rows_ = 0;
  bool scalar_scale_ = false;
};

}  // namespace
}  // namespace ew

void registerNpucOps(OpRegistry& reg) {
  const std::vector<DType> f32 = {DType::Float32};
  reg.add("Gelu", kNpucDomain)
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut)
      .inputs(1)
      .infer(inferSameAsInput0)
      .kernel(ew::makeGelu)
      .types(f32)
      .doc(
          "approximate=\"none\": y = 0.5 * x * (1 + erf(x / sqrt(2))); \"tanh\": y = 0.5 * x * "
          "(1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))");
  reg.add("SiLU", kNpucDomain)
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut)
      .inputs(1)
      .infer(inferSameAsInput0)
      .kernel(ew::floatUnary<ew::SiLUFn>())
      .types(f32)
      .doc("y = x * sigmoid(x) = x / (1 + exp(-x))");
  reg.add("GLU", kNpucDomain)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(ew::inferGlu)
      .kernel([](const KernelContext& c) { return std::make_unique<ew::GluKernel>(c); })
      .types(f32)
      .doc("split x along `axis` (default -1, even size) into halves a, b; y = a * sigmoid(b)");
  reg.add("RMSNorm", kNpucDomain)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(ew::inferRmsNorm)
      .kernel([](const KernelContext& c) { return std::make_unique<ew::RmsNormKernel>(c); })
      .types(f32)
      .doc(
          "y = x / sqrt(mean(x^2 over dims axis..last) + epsilon) * scale; axis default -1, epsilon "
          "default 1e-5; scale has the normalized dims' shape or is a scalar");
}

}  // namespace npuc
