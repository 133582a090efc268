// Cast and CastLike between every pair of storable dtypes.
//
// Conversion rules (per element):
//   * to bool: v != 0 (NaN is true).  From bool: 0 or 1.
//   * float -> integer: truncation toward zero, saturated to the target range, NaN -> 0. (ONNX
//     leaves out-of-range values undefined; C++ makes them undefined behaviour, so npuc pins them.)
//   * integer -> integer: two's-complement wrap-around, as numpy and ONNX Runtime do.
//   * to float16: through float32, rounded to nearest even (floatToHalf).
#include <limits>
#include <type_traits>

#include "opset/ops/ew_dispatch.h"
#include "opset/ops/ew_families.h"

namespace npuc {
namespace ew {
namespace {

// A Half becomes float before anything else happens to it.
template <typename S>
auto widen(S v) {
  if constexpr (std::is_same_v<S, Half>) {
    return halfToFloat(v.bits);
  } else {
    return v;
  }
}

template <typename D, typename S>
D convertOne(S raw) {
  const auto v = widen(raw);
  using V = decltype(v);
  if constexpr (std::is_same_v<D, Half>) {
    return Half{floatToHalf(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != V(0);
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    if (!(v == v)) return D(0);
    if (v <= static_cast<V>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<V>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

class CastKernel : public Kernel {
 public:
  explicit CastKernel(const KernelContext& ctx)
      : from_(ctx.input_types.at(0).dtype),
        to_(ctx.output_types.at(0).dtype),
        numel_(ctx.output_types[0].numel()) {
    dispatchStorable(from_, "Cast", [](auto) {});
    dispatchStorable(to_, "Cast", [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dispatchStorable(from_, "Cast", [&](auto stag) {
      using S = typename decltype(stag)::type;
      dispatchStorable(to_, "Cast", [&](auto dtag) {
        using D = typename decltype(dtag)::type;
        const S* src = io.inputs[0].as<const S>();
        D* dst = io.outputs[0].as<D>();
        for (int64_t i = 0; i < numel_; ++i) dst[i] = convertOne<D>(src[i]);
      });
    });
  }

 private:
  DType from_, to_;
  int64_t numel_;
};

void inferCast(InferContext& ctx) {
  const int64_t code = ctx.attrs().i("to");
  const DType to = dtypeFromOnnx(static_cast<int32_t>(code));
  if (!isStorable(to)) throw ShapeError("Cast to unsupported ONNX data type " + std::to_string(code));
  if (!isStorable(ctx.inputDType(0))) {
    throw ShapeError(std::string("Cast from unsupported dtype ") + dtypeName(ctx.inputDType(0)));
  }
  ctx.setOutput(0, to, ctx.inputShape(0));
}

// CastLike(x, like): Cast to like's dtype (like's values are not read).
void inferCastLike(InferContext& ctx) {
  const DType to = ctx.inputDType(1);
  if (!isStorable(to) || !isStorable(ctx.inputDType(0))) {
    throw ShapeError(std::string("CastLike between unsupported dtypes ") + dtypeName(ctx.inputDType(0)) +
                     " and " + dtypeName(to));
  }
  ctx.setOutput(0, to, ctx.inputShape(0));
}

}  // namespace

void registerCastOp(OpRegistry& reg) {
  reg.add("CastLike")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferCastLike)
      .kernel([](const KernelContext& c) { return std::make_unique<CastKernel>(c); })
      .doc("y = x converted to the dtype of `like` (input 1), with Cast's conversion rules");
  reg.add("Cast")
      .traits(OpTrait::ElementwiseUnary)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferCast)
      .kernel([](const KernelContext& c) { return std::make_unique<CastKernel>(c); })
      .doc(
          "y = x converted to dtype `to`; float->int truncates toward zero (saturating, NaN->0), "
          "int->int wraps, ->bool is x != 0, ->float16 rounds to nearest even");
}

}  // namespace ew
}  // namespace npuc
