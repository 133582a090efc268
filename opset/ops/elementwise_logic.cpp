// Comparisons (bool results), boolean logic, Where and the float classifiers IsNaN / IsInf.
#include <limits>

#include "opset/ops/ew_binary.h"
#include "opset/ops/ew_families.h"

namespace npuc {
namespace ew {
namespace {

struct EqualFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct GreaterFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterOrEqualFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LessFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessOrEqualFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct AndFn {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrFn {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorFn {
  bool operator()(bool a, bool b) const { return a != b; }
};

// And / Or / Xor: bool tensors only.
template <typename Fn>
class BoolBinaryKernel : public Kernel {
 public:
  explicit BoolBinaryKernel(const KernelContext& ctx)
      : plan_(ctx.output_types.at(0).shape, {ctx.input_types.at(0).shape, ctx.input_types.at(1).shape}) {}
  void run(const KernelIO& io) const override {
    runBinary(plan_, io.inputs[0].as<const bool>(), io.inputs[1].as<const bool>(), io.outputs[0].as<bool>(),
              Fn{});
  }

 private:
  BroadcastPlan<2> plan_;
};

template <typename Fn>
std::unique_ptr<Kernel> makeBoolBinary(const KernelContext& ctx) {
  return std::make_unique<BoolBinaryKernel<Fn>>(ctx);
}

// y = !x over the flat bool tensor.
class NotKernel : public Kernel {
 public:
  explicit NotKernel(const KernelContext& ctx) : numel_(ctx.output_types.at(0).numel()) {}
  void run(const KernelIO& io) const override {
    const bool* x = io.inputs[0].as<const bool>();
    bool* y = io.outputs[0].as<bool>();
    for (int64_t i = 0; i < numel_; ++i) y[i] = !x[i];
  }

 private:
  int64_t numel_;
};

// IsNaN / IsInf: float32 -> bool over the flat tensor.
template <typename Fn>
class ClassifyKernel : public Kernel {
 public:
  ClassifyKernel(const KernelContext& ctx, Fn fn) : fn_(fn), numel_(ctx.output_types.at(0).numel()) {}
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    bool* y = io.outputs[0].as<bool>();
    for (int64_t i = 0; i < numel_; ++i) y[i] = fn_(x[i]);
  }

 private:
  Fn fn_;
  int64_t numel_;
};
struct IsNaNFn {
  bool operator()(float x) const { return x != x; }
};
struct IsInfFn {
  bool negative, positive;
  bool operator()(float x) const {
    return (positive && x == std::numeric_limits<float>::infinity()) ||
           (negative && x == -std::numeric_limits<float>::infinity());
  }
};

// ---------------------------------------------------------------- Where

// y = cond ? x : y with three-way broadcasting. Data is moved by element size, so every storable
// dtype works.
class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const KernelContext& ctx)
      : elem_size_(dtypeSize(ctx.output_types.at(0).dtype)),
        plan_(ctx.output_types[0].shape,
              {ctx.input_types.at(0).shape, ctx.input_types.at(1).shape, ctx.input_types.at(2).shape}) {}
  void run(const KernelIO& io) const override {
    switch (elem_size_) {
      case 1: return runTyped<uint8_t>(io);
      case 2: return runTyped<uint16_t>(io);
      case 4: return runTyped<uint32_t>(io);
      case 8: return runTyped<uint64_t>(io);
      default: throw UnsupportedOpError("Where: unsupported element size " + std::to_string(elem_size_));
    }
  }

 private:
  template <typename T>
  void runTyped(const KernelIO& io) const {
    const bool* c = io.inputs[0].as<const bool>();
    const T* x = io.inputs[1].as<const T>();
    const T* y = io.inputs[2].as<const T>();
    T* out = io.outputs[0].as<T>();
    const int64_t len = plan_.innerLen();
    // Strides of 0 or 1 along the row; the all-present case gets its own loop (it vectorizes).
    const int64_t cs = plan_.innerPresent(0), xs = plan_.innerPresent(1), ys = plan_.innerPresent(2);
    plan_.forEachRow([&](int64_t o, const std::array<int64_t, 3>& off) {
      const bool* cr = c + off[0];
      const T* xr = x + off[1];
      const T* yr = y + off[2];
      T* orow = out + o;
      if (cs && xs && ys) {
        for (int64_t i = 0; i < len; ++i) orow[i] = cr[i] ? xr[i] : yr[i];
      } else {
        for (int64_t i = 0; i < len; ++i) orow[i] = cr[i * cs] ? xr[i * xs] : yr[i * ys];
      }
    });
  }

  size_t elem_size_;
  BroadcastPlan<3> plan_;
};

void inferWhere(InferContext& ctx) {
  if (ctx.inputDType(0) != DType::Bool) {
    throw ShapeError(std::string("Where condition must be bool, got ") + dtypeName(ctx.inputDType(0)));
  }
  if (ctx.inputDType(1) != ctx.inputDType(2)) {
    throw ShapeError(std::string("Where X and Y differ in dtype: ") + dtypeName(ctx.inputDType(1)) + " vs " +
                     dtypeName(ctx.inputDType(2)));
  }
  const Shape shape =
      broadcastShapes(broadcastShapes(ctx.inputShape(0), ctx.inputShape(1)), ctx.inputShape(2));
  ctx.setOutput(0, ctx.inputDType(1), shape);
}

void inferToBoolSameShape(InferContext& ctx) {
  ctx.setOutput(0, DType::Bool, ctx.inputShape(0));
}

}  // namespace

void registerLogicOps(OpRegistry& reg) {
  const std::vector<DType> numeric = allNumericDTypes();
  std::vector<DType> with_bool = numeric;
  with_bool.push_back(DType::Bool);
  auto compare = [&](const char* op, KernelFactory k, const std::vector<DType>& types, const char* doc) {
    return reg.add(op).inputs(2).infer(inferBroadcastToBool).kernel(std::move(k)).types(types).doc(doc);
  };
  compare("Equal", binaryKernel<EqualFn, TypeSet::AllNumericOrBool>(), with_bool,
          "y = (a == b), bool (broadcasting)")
      .traits(OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  compare("Greater", binaryKernel<GreaterFn>(), numeric, "y = (a > b), bool (broadcasting)")
      .quantClass(QuantClass::Float);
  compare("GreaterOrEqual", binaryKernel<GreaterOrEqualFn>(), numeric, "y = (a >= b), bool (broadcasting)")
      .quantClass(QuantClass::Float);
  compare("Less", binaryKernel<LessFn>(), numeric, "y = (a < b), bool (broadcasting)")
      .quantClass(QuantClass::Float);
  compare("LessOrEqual", binaryKernel<LessOrEqualFn>(), numeric, "y = (a <= b), bool (broadcasting)")
      .quantClass(QuantClass::Float);

  const std::vector<DType> bool_only = {DType::Bool};
  auto logic = [&](const char* op, KernelFactory k, const char* doc) {
    return reg.add(op).inputs(2).infer(inferBroadcastSameType).kernel(std::move(k)).types(bool_only).doc(doc);
  };
  logic("And", makeBoolBinary<AndFn>, "y = a && b on bool tensors (broadcasting)")
      .traits(OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  logic("Or", makeBoolBinary<OrFn>, "y = a || b on bool tensors (broadcasting)")
      .traits(OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  logic("Xor", makeBoolBinary<XorFn>, "y = a != b on bool tensors (broadcasting)")
      .traits(OpTrait::Commutative)
      .quantClass(QuantClass::Float);
  reg.add("Not")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferSameAsInput0)
      .kernel([](const KernelContext& c) { return std::make_unique<NotKernel>(c); })
      .types(bool_only)
      .doc("y = !x on a bool tensor");

  reg.add("Where")
      .quantClass(QuantClass::Float)
      .inputs(3)
      .infer(inferWhere)
      .kernel([](const KernelContext& c) { return std::make_unique<WhereKernel>(c); })
      .doc("y = cond ? x : y elementwise; cond is bool; the three inputs broadcast together; any dtype");

  reg.add("IsNaN")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferToBoolSameShape)
      .kernel([](const KernelContext& c) { return std::make_unique<ClassifyKernel<IsNaNFn>>(c, IsNaNFn{}); })
      .types({DType::Float32})
      .doc("y = (x is NaN), bool");
  reg.add("IsInf")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferToBoolSameShape)
      .kernel([](const KernelContext& c) {
        const Attributes& a = c.node.attrs();
        return std::make_unique<ClassifyKernel<IsInfFn>>(
            c, IsInfFn{a.i("detect_negative", 1) != 0, a.i("detect_positive", 1) != 0});
      })
      .types({DType::Float32})
      .doc("y = (x == +inf and detect_positive) or (x == -inf and detect_negative), bool");
}

}  // namespace ew
}  // namespace npuc
