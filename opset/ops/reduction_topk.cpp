// TopK(X, K): the k largest (largest=1, default) or smallest elements along `axis` (default -1),
// as values plus int64 indices. Ties go to the smaller index, as ONNX specifies; NaN ranks above
// every number (so it is "largest"). Results are always sorted (sorted=0 allows any order, so
// sorted order is valid for it too).
#include <algorithm>
#include <cmath>
#include <utility>

#include "opset/ops/ew_axis.h"
#include "opset/ops/ew_dispatch.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

void inferTopK(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const int64_t axis = normalizeAxis(ctx.attrs().i("axis", -1), static_cast<int64_t>(in.size()), "TopK axis");
  const Tensor& kt = ctx.requireConstInput(1, "TopK k");
  if (kt.numel() != 1) throw ShapeError("TopK k must hold one value, got shape " + shapeStr(kt.shape()));
  const int64_t k = kt.intAt(0);
  if (k < 0 || k > in[axis]) {
    throw ShapeError("TopK k = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) +
                     " of size " + std::to_string(in[axis]) + " in shape " + shapeStr(in));
  }
  Shape out = in;
  out[axis] = k;
  ctx.setOutput(0, ctx.inputDType(0), out);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DType::Int64, out);
}

template <typename T>
bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

class TopKKernel : public Kernel {
 public:
  explicit TopKKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype), largest_(ctx.node.attrs().i("largest", 1) != 0) {
    const Shape& in = ctx.input_types[0].shape;
    const int64_t axis = normalizeAxis(ctx.node.attrs().i("axis", -1), static_cast<int64_t>(in.size()));
    split_ = splitAtAxis(in, axis);
    k_ = ctx.output_types.at(0).shape[axis];
    dispatchNumeric(dtype_, "TopK", [](auto) {});
  }
  // One (value, index) pair per element of the axis; 16 bytes covers every supported type.
  size_t workspaceBytes() const override { return static_cast<size_t>(split_.len) * 2 * sizeof(int64_t); }

  void run(const KernelIO& io) const override {
    dispatchNumeric(dtype_, "TopK", [&](auto tag) {
      using T = typename decltype(tag)::type;
      runTyped(io.inputs[0].as<const T>(), io.outputs[0].as<T>(),
               io.outputs.size() > 1 ? io.outputs[1].as<int64_t>() : nullptr,
               static_cast<std::pair<T, int64_t>*>(io.workspace));
    });
  }

 private:
  template <typename T>
  void runTyped(const T* x, T* values, int64_t* indices, std::pair<T, int64_t>* ws) const {
    const int64_t len = split_.len, inner = split_.inner, k = k_;
    // Strict weak order "a ranks before b": by value (NaN highest), then by smaller index.
    auto before = [this](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
      const bool an = isNan(a.first), bn = isNan(b.first);
      if (an || bn) {
        if (an != bn) return largest_ ? an : bn;
        return a.second < b.second;
      }
      if (a.first != b.first) return largest_ ? a.first > b.first : a.first < b.first;
      return a.second < b.second;
    };
    for (int64_t o = 0; o < split_.outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* src = x + o * len * inner + i;
        for (int64_t r = 0; r < len; ++r) ws[r] = {src[r * inner], r};
        std::partial_sort(ws, ws + k, ws + len, before);
        const int64_t dst = o * k * inner + i;
        for (int64_t r = 0; r < k; ++r) {
          values[dst + r * inner] = ws[r].first;
          if (indices) indices[dst + r * inner] = ws[r].second;
        }
      }
    }
  }

  DType dtype_;
  bool largest_;
  AxisSplit split_;
  int64_t k_ = 0;
};

}  // namespace

void registerTopKOp(OpRegistry& reg) {
  reg.add("TopK")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .outputs(1, 2)
      .infer(inferTopK)
      .kernel([](const KernelContext& c) { return std::make_unique<TopKKernel>(c); })
      .types({DType::Float32, DType::Int32, DType::Int64})
      .doc(
          "(values, int64 indices) of the k largest (largest=1) or smallest elements along `axis`, "
          "sorted; ties: smaller index first; NaN ranks highest");
}

}  // namespace ew
}  // namespace npuc
