// One-input elementwise ops: activations, math functions and Clip. Each functor's comment (and
// the schema's doc) states the exact formula it computes.
#include <cmath>
#include <limits>

#include "opset/ops/ew_families.h"
#include "opset/ops/ew_math.h"
#include "opset/ops/ew_unary.h"

namespace npuc {
namespace ew {
namespace {

// ---------------------------------------------------------------- functors, float32 only

struct SigmoidFn {
  float operator()(float x) const { return fastSigmoid(x); }
};
struct TanhFn {
  float operator()(float x) const { return fastTanh(x); }
};
struct ExpFn {
  float operator()(float x) const { return fastExp(x); }
};
struct LogFn {
  float operator()(float x) const { return std::log(x); }
};
struct SqrtFn {
  float operator()(float x) const { return std::sqrt(x); }
};
struct ErfFn {
  float operator()(float x) const { return fastErf(x); }
};
struct SinFn {
  float operator()(float x) const { return std::sin(x); }
};
struct CosFn {
  float operator()(float x) const { return std::cos(x); }
};
struct TanFn {
  float operator()(float x) const { return std::tan(x); }
};
struct AsinFn {
  float operator()(float x) const { return std::asin(x); }
};
struct AcosFn {
  float operator()(float x) const { return std::acos(x); }
};
struct AtanFn {
  float operator()(float x) const { return std::atan(x); }
};
struct SinhFn {
  float operator()(float x) const { return std::sinh(x); }
};
struct CoshFn {
  float operator()(float x) const { return std::cosh(x); }
};
struct AsinhFn {
  float operator()(float x) const { return std::asinh(x); }
};
struct AcoshFn {
  float operator()(float x) const { return std::acosh(x); }
};
struct AtanhFn {
  float operator()(float x) const { return std::atanh(x); }
};
struct ReciprocalFn {
  float operator()(float x) const { return 1.0f / x; }
};
struct FloorFn {
  float operator()(float x) const { return std::floor(x); }
};
struct CeilFn {
  float operator()(float x) const { return std::ceil(x); }
};
// nearbyint rounds in the current rounding mode, which is round-half-to-even by default (and
// npuc never changes it), exactly ONNX Round's rule.
struct RoundFn {
  float operator()(float x) const { return std::nearbyint(x); }
};
struct SoftsignFn {
  float operator()(float x) const { return x / (1.0f + std::fabs(x)); }
};
// log(1 + e^x), written so e^x never overflows: max(x, 0) + log1p(e^-|x|).
struct SoftplusFn {
  float operator()(float x) const { return std::fmax(x, 0.0f) + std::log1p(fastExp(-std::fabs(x))); }
};
// x * tanh(softplus(x)). With e = e^x, tanh(log(1 + e)) = e(e + 2) / (e(e + 2) + 2), which needs
// one exp and no log. Above kMishLinear the factor is 1 in float (and e(e+2) would overflow).
struct MishFn {
  float operator()(float x) const {
    constexpr float kMishLinear = 20.0f;  // 1 - tanh(20) ~ 8e-18
    const float e = fastExp(x < kMishLinear ? x : kMishLinear);
    const float n = e * (e + 2.0f);
    return x < kMishLinear ? x * n / (n + 2.0f) : x;
  }
};
// x >= 0 ? x : alpha * x
struct LeakyReluFn {
  float alpha;
  float operator()(float x) const { return x >= 0.0f ? x : alpha * x; }
};
// x > 0 ? x : alpha * (e^x - 1)
struct EluFn {
  float alpha;
  float operator()(float x) const { return x > 0.0f ? x : alpha * (fastExp(x) - 1.0f); }
};
// gamma * (x > 0 ? x : alpha * (e^x - 1))
struct SeluFn {
  float alpha, gamma;
  float operator()(float x) const { return gamma * (x > 0.0f ? x : alpha * (fastExp(x) - 1.0f)); }
};
// x > alpha ? x : 0
struct ThresholdedReluFn {
  float alpha;
  float operator()(float x) const { return x > alpha ? x : 0.0f; }
};
// max(0, x) + min(0, alpha * (e^(x / alpha) - 1))
struct CeluFn {
  float alpha;
  float operator()(float x) const { return x > 0.0f ? x : alpha * (fastExp(x / alpha) - 1.0f); }
};
// x < -lambd ? x + bias : (x > lambd ? x - bias : 0)
struct ShrinkFn {
  float bias, lambd;
  float operator()(float x) const { return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0f); }
};
// max(0, min(1, alpha * x + beta))
struct HardSigmoidFn {
  float alpha, beta;
  float operator()(float x) const {
    const float v = alpha * x + beta;
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
  }
};
// x * max(0, min(1, x / 6 + 1/2))
struct HardSwishFn {
  float operator()(float x) const { return x * HardSigmoidFn{1.0f / 6.0f, 0.5f}(x); }
};

// ---------------------------------------------------------------- functors, float32/int32/int64

struct ReluFn {
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};
struct NegFn {
  template <typename T>
  T operator()(T x) const {
    return -x;
  }
};
struct AbsFn {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};
// -1, 0 or 1; NaN stays NaN.
struct SignFn {
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
  }
};

// ---------------------------------------------------------------- Clip

// Clip(x, min?, max?): min/max are optional scalar inputs, read at run time since they need not
// be constant. y = min(max(x, lo), hi) with lo/hi defaulting to the type's full range.
class ClipKernel : public Kernel {
 public:
  explicit ClipKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype), numel_(ctx.output_types.at(0).numel()) {
    dispatchAllNumeric(dtype_, "Clip", [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dispatchAllNumeric(dtype_, "Clip", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (io.inputs.size() > 1 && io.inputs[1].present()) lo = *io.inputs[1].as<const T>();
      if (io.inputs.size() > 2 && io.inputs[2].present()) hi = *io.inputs[2].as<const T>();
      const T* x = io.inputs[0].as<const T>();
      T* y = io.outputs[0].as<T>();
      for (int64_t i = 0; i < numel_; ++i) {
        const T v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    });
  }

 private:
  DType dtype_;
  int64_t numel_;
};

void inferClip(InferContext& ctx) {
  const DType t = ctx.inputDType(0);
  for (size_t i = 1; i < ctx.numInputs() && i < 3; ++i) {
    if (!ctx.hasInput(i)) continue;
    const char* which = i == 1 ? "min" : "max";
    if (shapeNumel(ctx.inputShape(i)) != 1) {
      throw ShapeError(std::string("Clip ") + which + " must be a scalar, got shape " +
                       shapeStr(ctx.inputShape(i)));
    }
    if (ctx.inputDType(i) != t) {
      throw ShapeError(std::string("Clip ") + which + " has dtype " + dtypeName(ctx.inputDType(i)) +
                       " but the input is " + dtypeName(t));
    }
  }
  inferSameAsInput0(ctx);
}

// Attribute readers for the parameterized functors.
float attrF(const KernelContext& ctx, const char* name, float def) {
  return ctx.node.attrs().f(name, def);
}

}  // namespace

void registerUnaryMathOps(OpRegistry& reg) {
  const std::vector<DType> f32 = {DType::Float32};
  const std::vector<DType> numeric = {DType::Float32, DType::Int32, DType::Int64};
  auto unary = [&](const char* op, KernelFactory k, const std::vector<DType>& types, const char* doc) {
    return reg.add(op).inputs(1).infer(inferSameAsInput0).kernel(std::move(k)).types(types).doc(doc);
  };

  unary("Relu", numericUnary<ReluFn>(), numeric, "y = max(x, 0)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation)
      .quantClass(QuantClass::Clamp);
  unary("Neg", numericUnary<NegFn>(), numeric, "y = -x")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary)
      .quantClass(QuantClass::Float);
  unary("Abs", numericUnary<AbsFn>(), numeric, "y = |x|")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary)
      .quantClass(QuantClass::Float);
  unary("Sign", numericUnary<SignFn>(), numeric, "y = 1 if x > 0, -1 if x < 0, else x (0 or NaN)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);

  unary("Sigmoid", floatUnary<SigmoidFn>(), f32, "y = 1 / (1 + exp(-x))")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation |
              OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut);
  unary("Tanh", floatUnary<TanhFn>(), f32, "y = tanh(x)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation |
              OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut);
  unary("Exp", floatUnary<ExpFn>(), f32, "y = exp(x)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut);
  unary("Log", floatUnary<LogFn>(), f32, "y = ln(x) (NaN for x < 0, -inf for 0)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Float);
  unary("Sqrt", floatUnary<SqrtFn>(), f32, "y = sqrt(x) (NaN for x < 0)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental)
      .quantClass(QuantClass::Float);
  unary("Erf", floatUnary<ErfFn>(), f32, "y = erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt")
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental)
      .quantClass(QuantClass::Float);
  unary("Sin", floatUnary<SinFn>(), f32, "y = sin(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Cos", floatUnary<CosFn>(), f32, "y = cos(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Tan", floatUnary<TanFn>(), f32, "y = tan(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Asin", floatUnary<AsinFn>(), f32, "y = asin(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Acos", floatUnary<AcosFn>(), f32, "y = acos(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Atan", floatUnary<AtanFn>(), f32, "y = atan(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Sinh", floatUnary<SinhFn>(), f32, "y = sinh(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Cosh", floatUnary<CoshFn>(), f32, "y = cosh(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Asinh", floatUnary<AsinhFn>(), f32, "y = asinh(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Acosh", floatUnary<AcoshFn>(), f32, "y = acosh(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Atanh", floatUnary<AtanhFn>(), f32, "y = atanh(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Reciprocal", floatUnary<ReciprocalFn>(), f32, "y = 1 / x")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Floor", floatUnary<FloorFn>(), f32, "y = floor(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Ceil", floatUnary<CeilFn>(), f32, "y = ceil(x)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Round", floatUnary<RoundFn>(), f32, "y = x rounded to the nearest integer, halves to even")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Softsign", floatUnary<SoftsignFn>(), f32, "y = x / (1 + |x|)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary)
      .quantClass(QuantClass::Float);
  unary("Softplus", floatUnary<SoftplusFn>(), f32,
        "y = ln(1 + exp(x)), evaluated as max(x,0) + log1p(exp(-|x|))")
      .traits(OpTrait::ElementwiseUnary | OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Float);
  unary("Mish", floatUnary<MishFn>(), f32, "y = x * tanh(ln(1 + exp(x)))")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("HardSwish", floatUnary<HardSwishFn>(), f32, "y = x * max(0, min(1, x / 6 + 0.5))")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation |
              OpTrait::Transcendental | OpTrait::SlowActivation)
      .quantClass(QuantClass::Lut)
      .since(14);
  unary("LeakyRelu",
        floatUnary<LeakyReluFn>([](const KernelContext& c) { return LeakyReluFn{attrF(c, "alpha", 0.01f)}; }),
        f32, "y = x >= 0 ? x : alpha * x (alpha default 0.01)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation)
      .quantClass(QuantClass::Float);
  unary("Elu", floatUnary<EluFn>([](const KernelContext& c) { return EluFn{attrF(c, "alpha", 1.0f)}; }), f32,
        "y = x > 0 ? x : alpha * (exp(x) - 1) (alpha default 1)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::Transcendental |
              OpTrait::SlowActivation)
      .quantClass(QuantClass::Float);
  // Default alpha/gamma are the float32 values the ONNX spec gives.
  unary("Selu", floatUnary<SeluFn>([](const KernelContext& c) {
          return SeluFn{attrF(c, "alpha", 1.67326319217681884765625f),
                        attrF(c, "gamma", 1.05070102214813232421875f)};
        }),
        f32, "y = gamma * (x > 0 ? x : alpha * (exp(x) - 1)) (alpha 1.6732632, gamma 1.0507010 by default)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary)
      .quantClass(QuantClass::Float);
  unary("ThresholdedRelu", floatUnary<ThresholdedReluFn>([](const KernelContext& c) {
          return ThresholdedReluFn{attrF(c, "alpha", 1.0f)};
        }),
        f32, "y = x > alpha ? x : 0 (alpha default 1)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Celu", floatUnary<CeluFn>([](const KernelContext& c) { return CeluFn{attrF(c, "alpha", 1.0f)}; }),
        f32, "y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (alpha default 1)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("Shrink", floatUnary<ShrinkFn>([](const KernelContext& c) {
          return ShrinkFn{attrF(c, "bias", 0.0f), attrF(c, "lambd", 0.5f)};
        }),
        f32, "y = x < -lambd ? x + bias : (x > lambd ? x - bias : 0) (bias 0, lambd 0.5 by default)")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float);
  unary("HardSigmoid", floatUnary<HardSigmoidFn>([](const KernelContext& c) {
          return HardSigmoidFn{attrF(c, "alpha", 0.2f), attrF(c, "beta", 0.5f)};
        }),
        f32, "y = max(0, min(1, alpha * x + beta)) (alpha 0.2, beta 0.5 by default)")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::SlowActivation)
      .quantClass(QuantClass::Float);

  reg.add("Clip")
      .traits(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary | OpTrait::HostFusableActivation)
      .quantClass(QuantClass::Clamp)
      .inputs(1, 3)
      .infer(inferClip)
      .kernel([](const KernelContext& c) { return std::make_unique<ClipKernel>(c); })
      .types(allNumericDTypes())
      .doc("y = min(max(x, min), max); min/max are optional scalar inputs defaulting to the type's range");
}

}  // namespace ew
}  // namespace npuc
