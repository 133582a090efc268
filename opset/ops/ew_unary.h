// Kernels for one-input, same-shape elementwise ops (activations and math functions), shared by
// the ONNX elementwise family and npuc's own activations (Gelu, SiLU).
//
// An op is a small functor `y = fn(x)`; the kernel is one tight loop over the flat tensor, so the
// compiler can vectorize it whenever the functor is branch-free.
#pragma once

#include <memory>

#include "opset/ops/ew_dispatch.h"
#include "opset/registry.h"

namespace npuc {
namespace ew {

// y[i] = fn(x[i]) for float32 tensors.
template <typename Fn>
class FloatUnaryKernel : public Kernel {
 public:
  FloatUnaryKernel(const KernelContext& ctx, Fn fn) : fn_(fn), numel_(ctx.output_types.at(0).numel()) {}
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    const Fn fn = fn_;  // local copy: lets the compiler keep parameters in registers
    for (int64_t i = 0; i < numel_; ++i) y[i] = fn(x[i]);
  }

 private:
  Fn fn_;
  int64_t numel_;
};

// y[i] = fn(x[i]) for float32, int32 and int64 (fn has a templated call operator).
template <typename Fn>
class NumericUnaryKernel : public Kernel {
 public:
  NumericUnaryKernel(const KernelContext& ctx, Fn fn)
      : fn_(fn), dtype_(ctx.input_types.at(0).dtype), numel_(ctx.output_types.at(0).numel()) {
    dispatchNumeric(dtype_, "unary op", [](auto) {});  // refuse other dtypes now, not in run()
  }
  void run(const KernelIO& io) const override {
    dispatchNumeric(dtype_, "unary op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = io.inputs[0].as<const T>();
      T* y = io.outputs[0].as<T>();
      const Fn fn = fn_;
      for (int64_t i = 0; i < numel_; ++i) y[i] = fn(x[i]);
    });
  }

 private:
  Fn fn_;
  DType dtype_;
  int64_t numel_;
};

// Kernel factories. `makeFn(ctx)` builds the functor (e.g. from the node's attributes).
template <typename Fn>
KernelFactory floatUnary() {
  return [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<FloatUnaryKernel<Fn>>(ctx, Fn{});
  };
}
template <typename Fn, typename MakeFn>
KernelFactory floatUnary(MakeFn makeFn) {
  return [makeFn](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<FloatUnaryKernel<Fn>>(ctx, makeFn(ctx));
  };
}
template <typename Fn>
KernelFactory numericUnary() {
  return [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<NumericUnaryKernel<Fn>>(ctx, Fn{});
  };
}

}  // namespace ew
}  // namespace npuc
