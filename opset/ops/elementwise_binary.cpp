// Broadcasting arithmetic: Add, Sub, Mul, Div, Mod, Pow, BitShift, PRelu and the variadic Sum,
// Mean, Max, Min.
#include <cmath>
#include <type_traits>

#include "opset/ops/ew_binary.h"
#include "opset/ops/ew_families.h"

namespace npuc {
namespace ew {

void inferBroadcast(InferContext& ctx, DType out) {
  const DType t = ctx.inputDType(0);
  Shape shape = ctx.inputShape(0);
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (ctx.inputDType(i) != t) {
      throw ShapeError("input " + std::to_string(i) + " has dtype " + dtypeName(ctx.inputDType(i)) +
                       " but input 0 has " + dtypeName(t));
    }
    shape = broadcastShapes(shape, ctx.inputShape(i));
  }
  ctx.setOutput(0, out == DType::Undefined ? t : out, std::move(shape));
}

namespace {

// ---------------------------------------------------------------- functors

struct AddFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
// Integer division truncates toward zero (C++ and ONNX Runtime semantics). An integer division
// by zero yields 0 instead of trapping the process.
struct DivFn {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return b == 0 ? T(0) : a / b;
    } else {
      return a / b;
    }
  }
};
struct MaxFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct MinFn {
  template <typename T>
  T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
// fmod = 1: C fmod / %, the result takes the dividend's sign. fmod = 0: the result takes the
// divisor's sign (Python's %). ONNX allows fmod = 0 only for integers; npuc also accepts floats
// there with the same rule. Modulo by an integer 0 yields 0 instead of trapping.
struct ModFn {
  bool fmod;
  template <typename T>
  T operator()(T a, T b) const {
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      r = a % b;
    } else {
      r = std::fmod(a, b);
    }
    if (!fmod && r != T(0) && isNegative(r) != isNegative(b)) r += b;
    return r;
  }
};
// x >= 0 ? x : slope * x
struct PReluFn {
  template <typename T>
  T operator()(T x, T slope) const {
    return x >= T(0) ? x : slope * x;
  }
};

// direction LEFT: a << b, RIGHT: a >> b, on unsigned integers; shifting by the bit width or
// more gives 0 (C++ leaves it undefined).
struct BitShiftFn {
  bool left;
  template <typename T>
  T operator()(T a, T b) const {
    if (b >= T(sizeof(T) * 8)) return T(0);
    return left ? T(a << b) : T(a >> b);
  }
};

std::unique_ptr<Kernel> makeBitShift(const KernelContext& ctx) {
  const std::string dir = ctx.node.attrs().s("direction");
  if (dir != "LEFT" && dir != "RIGHT") {
    throw UnsupportedOpError("BitShift direction '" + dir + "' must be \"LEFT\" or \"RIGHT\"");
  }
  return std::make_unique<BinaryKernel<BitShiftFn, TypeSet::Unsigned>>(ctx, BitShiftFn{dir == "LEFT"});
}

// ---------------------------------------------------------------- variadic Sum / Mean / Max / Min

// out = fn(...fn(fn(x0, x1), x2)..., xn); with kMean the result is divided by n. Each step is a
// broadcast of out (full shape) against the next input, written in place.
template <typename Fn, bool kMean = false>
class VariadicKernel : public Kernel {
 public:
  explicit VariadicKernel(const KernelContext& ctx) : dtype_(ctx.input_types.at(0).dtype) {
    const Shape& out = ctx.output_types.at(0).shape;
    const size_t n = ctx.input_types.size();
    numel_ = shapeNumel(out);
    first_ = BroadcastPlan<2>(out, {ctx.input_types[0].shape, n > 1 ? ctx.input_types[1].shape : Shape{}});
    for (size_t i = 2; i < n; ++i)
      rest_.emplace_back(out, std::array<Shape, 2>{out, ctx.input_types[i].shape});
    dispatchAllNumeric(dtype_, ctx.node.opType().c_str(), [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dispatchAllNumeric(dtype_, "variadic op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = io.outputs[0].as<T>();
      const T* x0 = io.inputs[0].as<const T>();
      if (io.inputs.size() == 1) {
        for (int64_t i = 0; i < numel_; ++i) out[i] = x0[i];
      } else {
        runBinary(first_, x0, io.inputs[1].as<const T>(), out, Fn{});
        for (size_t k = 0; k < rest_.size(); ++k)
          runBinary(rest_[k], out, io.inputs[k + 2].as<const T>(), out, Fn{});
      }
      if constexpr (kMean) {
        const T n = static_cast<T>(io.inputs.size());
        for (int64_t i = 0; i < numel_; ++i) out[i] /= n;
      }
    });
  }

 private:
  DType dtype_;
  int64_t numel_ = 0;
  BroadcastPlan<2> first_;
  std::vector<BroadcastPlan<2>> rest_;
};

template <typename Fn, bool kMean = false>
std::unique_ptr<Kernel> makeVariadic(const KernelContext& ctx) {
  return std::make_unique<VariadicKernel<Fn, kMean>>(ctx);
}

// ---------------------------------------------------------------- Pow

// y = base ^ exponent with broadcasting. The base is float32/int32/int64; the exponent may have
// any real numeric type (the output has the base's). A constant scalar exponent of 1, 2, 3, 0.5 or -1 is
// computed without pow() (these are what real models use, e.g. x^2 in a hand-written LayerNorm).
class PowKernel : public Kernel {
 public:
  explicit PowKernel(const KernelContext& ctx)
      : base_(ctx.input_types.at(0).dtype),
        exp_(ctx.input_types.at(1).dtype),
        plan_(ctx.output_types.at(0).shape, {ctx.input_types[0].shape, ctx.input_types[1].shape}) {
    dispatchNumeric(base_, "Pow base", [](auto) {});
    dispatchAllNumeric(exp_, "Pow exponent", [](auto) {});
    const Tensor* e = ctx.constInput(1);
    if (base_ == DType::Float32 && e && e->numel() == 1 && plan_.numel() == ctx.input_types[0].numel()) {
      special_ = classify(e->doubleAt(0));
    }
  }
  void run(const KernelIO& io) const override {
    if (special_ != Special::None) return runSpecial(io);
    dispatchNumeric(base_, "Pow base", [&](auto btag) {
      using B = typename decltype(btag)::type;
      dispatchAllNumeric(exp_, "Pow exponent", [&](auto etag) {
        using E = typename decltype(etag)::type;
        runBinary(plan_, io.inputs[0].as<const B>(), io.inputs[1].as<const E>(), io.outputs[0].as<B>(),
                  [](B b, E e) -> B {
                    if constexpr (std::is_same_v<B, float>) {
                      return std::pow(b, static_cast<float>(e));
                    } else {
                      return static_cast<B>(std::pow(static_cast<double>(b), static_cast<double>(e)));
                    }
                  });
      });
    });
  }

 private:
  enum class Special { None, One, Square, Cube, Sqrt, Reciprocal };
  static Special classify(double e) {
    if (e == 1.0) return Special::One;
    if (e == 2.0) return Special::Square;
    if (e == 3.0) return Special::Cube;
    if (e == 0.5) return Special::Sqrt;
    if (e == -1.0) return Special::Reciprocal;
    return Special::None;
  }
  void runSpecial(const KernelIO& io) const {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    const int64_t n = plan_.numel();
    switch (special_) {
      case Special::One:
        for (int64_t i = 0; i < n; ++i) y[i] = x[i];
        break;
      case Special::Square:
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
        break;
      case Special::Cube:
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
        break;
      case Special::Sqrt:
        for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
        break;
      case Special::Reciprocal:
        for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / x[i];
        break;
      case Special::None: break;
    }
  }

  DType base_, exp_;
  BroadcastPlan<2> plan_;
  Special special_ = Special::None;
};

void inferPow(InferContext& ctx) {
  ctx.setOutput(0, ctx.inputDType(0), broadcastShapes(ctx.inputShape(0), ctx.inputShape(1)));
}

// PRelu's slope broadcasts to X (one direction only); the output has X's shape.
void inferPRelu(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  const Shape& slope = ctx.inputShape(1);
  if (ctx.inputDType(1) != ctx.inputDType(0)) {
    throw ShapeError(std::string("PRelu slope has dtype ") + dtypeName(ctx.inputDType(1)) + " but X has " +
                     dtypeName(ctx.inputDType(0)));
  }
  if (slope.size() > x.size() || broadcastShapes(x, slope) != x) {
    throw ShapeError("PRelu slope of shape " + shapeStr(slope) + " does not broadcast to X of shape " +
                     shapeStr(x));
  }
  ctx.setOutput(0, ctx.inputDType(0), x);
}

}  // namespace

void registerArithmeticOps(OpRegistry& reg) {
  const std::vector<DType> numeric = allNumericDTypes();
  const std::vector<DType> f32 = {DType::Float32};
  auto binary = [&](const char* op, KernelFactory k, const char* doc) {
    return reg.add(op).inputs(2).infer(inferBroadcastSameType).kernel(std::move(k)).types(numeric).doc(doc);
  };
  binary("Add", binaryKernel<AddFn>(), "y = a + b (numpy broadcasting)")
      .traits(OpTrait::ElementwiseBinary | OpTrait::Commutative | OpTrait::ChannelwiseBinary)
      .quantClass(QuantClass::RequantBinary);
  binary("Sub", binaryKernel<SubFn>(), "y = a - b (numpy broadcasting)")
      .traits(OpTrait::ElementwiseBinary | OpTrait::ChannelwiseBinary)
      .quantClass(QuantClass::Float);
  binary("Mul", binaryKernel<MulFn>(), "y = a * b (numpy broadcasting)")
      .traits(OpTrait::ElementwiseBinary | OpTrait::Commutative | OpTrait::ChannelwiseBinary)
      .quantClass(QuantClass::RequantBinary);
  binary("Div", binaryKernel<DivFn>(),
         "y = a / b (numpy broadcasting); integers truncate toward zero, x/0 = 0")
      .traits(OpTrait::ElementwiseBinary | OpTrait::ChannelwiseBinary)
      .quantClass(QuantClass::Float);
  reg.add("Mod")
      .traits(OpTrait::ElementwiseBinary)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferBroadcastSameType)
      .kernel([](const KernelContext& c) -> std::unique_ptr<Kernel> {
        return std::make_unique<BinaryKernel<ModFn>>(c, ModFn{c.node.attrs().i("fmod", 0) != 0});
      })
      .types(numeric)
      .doc("y = a mod b (broadcasting); fmod=1: sign of a (C fmod), fmod=0: sign of b (Python %)");
  reg.add("BitShift")
      .traits(OpTrait::ElementwiseBinary)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferBroadcastSameType)
      .kernel(makeBitShift)
      .types({DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64})
      .doc(
          "y = a << b (direction=LEFT) or a >> b (RIGHT) on unsigned integers (broadcasting); shifts >= "
          "the bit width give 0");
  reg.add("Pow")
      .traits(OpTrait::ElementwiseBinary | OpTrait::Transcendental)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferPow)
      .kernel([](const KernelContext& c) { return std::make_unique<PowKernel>(c); })
      .types(numericDTypes())
      .doc("y = a ^ b (broadcasting); b may have any numeric type independently of a; y has a's dtype");
  reg.add("PRelu")
      .traits(OpTrait::ElementwiseBinary | OpTrait::ChannelwiseBinary)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferPRelu)
      .kernel(binaryKernel<PReluFn, TypeSet::Numeric>())
      .types(f32)
      .doc("y = x >= 0 ? x : slope * x; slope broadcasts to x (e.g. [C,1,1] per channel)");

  auto variadic = [&](const char* op, KernelFactory k, const std::vector<DType>& types, const char* doc) {
    return reg.add(op).inputs(1, -1).infer(inferBroadcastSameType).kernel(std::move(k)).types(types).doc(doc);
  };
  variadic("Sum", makeVariadic<AddFn>, numeric, "y = x0 + x1 + ... (all inputs broadcast together)")
      .traits(OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  variadic("Mean", makeVariadic<AddFn, true>, {DType::Float32, DType::Float64},
           "y = (x0 + x1 + ... + x{n-1}) / n (broadcasting)")
      .quantClass(QuantClass::Float);
  variadic("Max", makeVariadic<MaxFn>, numeric, "y = max(x0, x1, ...) elementwise (broadcasting)")
      .traits(OpTrait::ElementwiseBinary | OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  variadic("Min", makeVariadic<MinFn>, numeric, "y = min(x0, x1, ...) elementwise (broadcasting)")
      .traits(OpTrait::ElementwiseBinary | OpTrait::Commutative)
      .quantClass(QuantClass::Float);
}

}  // namespace ew
}  // namespace npuc
