// ArgMax / ArgMin: int64 index of the extreme element along one axis. Attributes: axis (default 0),
// keepdims (default 1), select_last_index (default 0: the first of equal extremes wins).
// Hardmax (opset 13): the one-hot form of ArgMax along `axis` (default -1), same shape as x.
#include <cstring>

#include "opset/ops/ew_axis.h"
#include "opset/ops/ew_dispatch.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

void inferArg(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const int64_t axis = normalizeAxis(ctx.attrs().i("axis", 0), static_cast<int64_t>(in.size()));
  if (in[axis] == 0) throw ShapeError("ArgMax/ArgMin over an empty axis " + std::to_string(axis));
  Shape out = in;
  if (ctx.attrs().i("keepdims", 1) != 0) {
    out[axis] = 1;
  } else {
    out.erase(out.begin() + axis);
  }
  ctx.setOutput(0, DType::Int64, out);
}

// kMax: ArgMax, else ArgMin. With `last`, a later equal element replaces the current best.
template <bool kMax>
class ArgKernel : public Kernel {
 public:
  explicit ArgKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype), last_(ctx.node.attrs().i("select_last_index", 0) != 0) {
    const Shape& in = ctx.input_types[0].shape;
    split_ = splitAtAxis(in, normalizeAxis(ctx.node.attrs().i("axis", 0), static_cast<int64_t>(in.size())));
    dispatchNumeric(dtype_, kMax ? "ArgMax" : "ArgMin", [](auto) {});
  }
  // The running best value of each inner lane (8 bytes covers every supported element type).
  size_t workspaceBytes() const override { return static_cast<size_t>(split_.inner) * sizeof(int64_t); }

  void run(const KernelIO& io) const override {
    dispatchNumeric(dtype_, "ArgMax/ArgMin", [&](auto tag) {
      using T = typename decltype(tag)::type;
      runTyped(io.inputs[0].as<const T>(), io.outputs[0].as<int64_t>(), static_cast<T*>(io.workspace));
    });
  }

 private:
  template <typename T>
  bool better(T v, T best) const {
    if (last_) return kMax ? v >= best : v <= best;
    return kMax ? v > best : v < best;
  }

  // Walks the axis in order, updating all inner lanes per step (contiguous loads).
  template <typename T>
  void runTyped(const T* x, int64_t* y, T* best) const {
    const int64_t len = split_.len, inner = split_.inner;
    for (int64_t o = 0; o < split_.outer; ++o) {
      const T* xo = x + o * len * inner;
      int64_t* yo = y + o * inner;
      std::memcpy(best, xo, static_cast<size_t>(inner) * sizeof(T));
      for (int64_t i = 0; i < inner; ++i) yo[i] = 0;
      for (int64_t r = 1; r < len; ++r) {
        const T* row = xo + r * inner;
        for (int64_t i = 0; i < inner; ++i) {
          if (better(row[i], best[i])) {
            best[i] = row[i];
            yo[i] = r;
          }
        }
      }
    }
  }

  DType dtype_;
  bool last_;
  AxisSplit split_;
};

// y = 1 at the first maximum of each slice along the axis, 0 elsewhere.
class HardmaxKernel : public Kernel {
 public:
  explicit HardmaxKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types.at(0).shape;
    split_ = splitAtAxis(in, normalizeAxis(ctx.node.attrs().i("axis", -1), static_cast<int64_t>(in.size())));
  }
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    const int64_t len = split_.len, inner = split_.inner;
    for (int64_t o = 0; o < split_.outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        int64_t best = 0;
        for (int64_t r = 1; r < len; ++r) {
          if (x[base + r * inner] > x[base + best * inner]) best = r;
        }
        for (int64_t r = 0; r < len; ++r) y[base + r * inner] = r == best ? 1.0f : 0.0f;
      }
    }
  }

 private:
  AxisSplit split_;
};

void inferHardmax(InferContext& ctx) {
  normalizeAxis(ctx.attrs().i("axis", -1), static_cast<int64_t>(ctx.inputShape(0).size()), "Hardmax axis");
  inferSameAsInput0(ctx);
}

}  // namespace

void registerArgOps(OpRegistry& reg) {
  reg.add("Hardmax")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferHardmax)
      .kernel([](const KernelContext& c) { return std::make_unique<HardmaxKernel>(c); })
      .types({DType::Float32})
      .doc("y = 1 where x is the first maximum along `axis` (default -1), else 0");
  const std::vector<DType> numeric = {DType::Float32, DType::Int32, DType::Int64};
  reg.add("ArgMax")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferArg)
      .kernel([](const KernelContext& c) { return std::make_unique<ArgKernel<true>>(c); })
      .types(numeric)
      .doc("y = int64 index of max(x) along `axis`; ties: first index (last if select_last_index=1)");
  reg.add("ArgMin")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferArg)
      .kernel([](const KernelContext& c) { return std::make_unique<ArgKernel<false>>(c); })
      .types(numeric)
      .doc("y = int64 index of min(x) along `axis`; ties: first index (last if select_last_index=1)");
}

}  // namespace ew
}  // namespace npuc
