// CumSum(x, axis): running sums along one axis. Attributes exclusive (default 0: element r
// includes x[r]; 1: it holds the sum of the elements before r) and reverse (default 0; 1 sums
// from the end). The axis is a scalar int32/int64 input, read at run time (it need not be constant).
#include "opset/ops/ew_axis.h"
#include "opset/ops/ew_dispatch.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

void inferCumSum(InferContext& ctx) {
  if (shapeNumel(ctx.inputShape(1)) != 1) {
    throw ShapeError("CumSum axis must be a scalar, got shape " + shapeStr(ctx.inputShape(1)));
  }
  if (const Tensor* axis = ctx.constInput(1)) {
    normalizeAxis(axis->intAt(0), static_cast<int64_t>(ctx.inputShape(0).size()), "CumSum axis");
  }
  inferSameAsInput0(ctx);
}

class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype),
        axis_dtype_(ctx.input_types.at(1).dtype),
        shape_(ctx.input_types[0].shape),
        exclusive_(ctx.node.attrs().i("exclusive", 0) != 0),
        reverse_(ctx.node.attrs().i("reverse", 0) != 0) {
    dispatchAllNumeric(dtype_, "CumSum", [](auto) {});
    if (axis_dtype_ != DType::Int32 && axis_dtype_ != DType::Int64) {
      throw UnsupportedOpError(std::string("CumSum axis must be int32 or int64, got ") +
                               dtypeName(axis_dtype_));
    }
  }
  void run(const KernelIO& io) const override {
    const int64_t raw_axis =
        axis_dtype_ == DType::Int32 ? *io.inputs[1].as<const int32_t>() : *io.inputs[1].as<const int64_t>();
    const AxisSplit s =
        splitAtAxis(shape_, normalizeAxis(raw_axis, static_cast<int64_t>(shape_.size()), "CumSum axis"));
    dispatchAllNumeric(dtype_, "CumSum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      runTyped(s, io.inputs[0].as<const T>(), io.outputs[0].as<T>());
    });
  }

 private:
  // Walks the axis one row of `inner` contiguous elements at a time: y[r] = y[prev] + x[r or prev].
  template <typename T>
  void runTyped(const AxisSplit& s, const T* x, T* y) const {
    const int64_t inner = s.inner;
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = o * s.len * inner;
      for (int64_t step = 0; step < s.len; ++step) {
        const int64_t r = reverse_ ? s.len - 1 - step : step;
        const T* xr = x + base + r * inner;
        T* yr = y + base + r * inner;
        if (step == 0) {
          for (int64_t i = 0; i < inner; ++i) yr[i] = exclusive_ ? T(0) : xr[i];
          continue;
        }
        const int64_t prev = reverse_ ? r + 1 : r - 1;
        const T* yp = y + base + prev * inner;
        const T* add = exclusive_ ? x + base + prev * inner : xr;
        for (int64_t i = 0; i < inner; ++i) yr[i] = yp[i] + add[i];
      }
    }
  }

  DType dtype_, axis_dtype_;
  Shape shape_;
  bool exclusive_, reverse_;
};

}  // namespace

void registerCumSumOp(OpRegistry& reg) {
  reg.add("CumSum")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferCumSum)
      .kernel([](const KernelContext& c) { return std::make_unique<CumSumKernel>(c); })
      .types(allNumericDTypes())
      .doc(
          "y[r] = sum of x[0..r] along `axis` (input 1); exclusive=1 stops at r-1, reverse=1 sums from the "
          "end");
}

}  // namespace ew
}  // namespace npuc
