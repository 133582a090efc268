// Kernels and shape inference for broadcasting two-input (and variadic) elementwise ops, shared
// by the arithmetic and the comparison / logic sub-families.
//
// An op is a functor with a templated call operator `out = fn(a, b)`; its result type decides the
// output element type (bool for comparisons).
#pragma once

#include <memory>
#include <string>

#include "opset/ops/ew_broadcast.h"
#include "opset/ops/ew_dispatch.h"
#include "opset/registry.h"

namespace npuc {
namespace ew {

// Which element types a kernel instantiates.
enum class TypeSet { Numeric, AllNumeric, AllNumericOrBool, Unsigned };

template <TypeSet kTypes, typename Fn>
decltype(auto) dispatchTypeSet(DType t, const char* op, Fn&& fn) {
  if constexpr (kTypes == TypeSet::Numeric) {
    return dispatchNumeric(t, op, std::forward<Fn>(fn));
  } else if constexpr (kTypes == TypeSet::AllNumeric) {
    return dispatchAllNumeric(t, op, std::forward<Fn>(fn));
  } else if constexpr (kTypes == TypeSet::AllNumericOrBool) {
    return dispatchAllNumericOrBool(t, op, std::forward<Fn>(fn));
  } else {
    return dispatchUnsigned(t, op, std::forward<Fn>(fn));
  }
}

// out = fn(a, b) with numpy broadcasting; a and b share one element type.
template <typename Fn, TypeSet kTypes = TypeSet::AllNumeric>
class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const KernelContext& ctx, Fn fn)
      : fn_(fn),
        dtype_(ctx.input_types.at(0).dtype),
        plan_(ctx.output_types.at(0).shape, {ctx.input_types.at(0).shape, ctx.input_types.at(1).shape}) {
    dispatchTypeSet<kTypes>(dtype_, ctx.node.opType().c_str(), [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dispatchTypeSet<kTypes>(dtype_, "binary op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using O = decltype(fn_(T{}, T{}));
      runBinary(plan_, io.inputs[0].as<const T>(), io.inputs[1].as<const T>(), io.outputs[0].as<O>(), fn_);
    });
  }

 private:
  Fn fn_;
  DType dtype_;
  BroadcastPlan<2> plan_;
};

template <typename Fn, TypeSet kTypes = TypeSet::AllNumeric>
KernelFactory binaryKernel(Fn fn = Fn{}) {
  return [fn](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<BinaryKernel<Fn, kTypes>>(ctx, fn);
  };
}

// Output dtype `out` (Undefined: input 0's) and the broadcast of all input shapes. Every input
// must have input 0's dtype.
void inferBroadcast(InferContext& ctx, DType out = DType::Undefined);
inline void inferBroadcastSameType(InferContext& ctx) {
  inferBroadcast(ctx);
}
inline void inferBroadcastToBool(InferContext& ctx) {
  inferBroadcast(ctx, DType::Bool);
}

}  // namespace ew
}  // namespace npuc
