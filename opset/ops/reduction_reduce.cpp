// Reduce* ops: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp.
//
// Canonical (opset 18) form: axes is an optional int64 input (a constant once shapes are fixed);
// attributes keepdims (default 1) and noop_with_empty_axes (default 0). Absent or empty axes
// reduce every dim, unless noop_with_empty_axes = 1, which makes the op the identity.
//
// Each op is a "reducer": y = finalize(combine over the reduced elements of map(x)). The
// iteration is planned once per node (ReducePlan) and is shared by all reducers.
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "opset/ops/ew_dispatch.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

// Flags per input dim: true where the dim is reduced. All false means identity.
std::vector<bool> reducedDims(const Shape& in, const Tensor* axes, const Attributes& attrs) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), false);
  if (!axes || axes->numel() == 0) {
    if (attrs.i("noop_with_empty_axes", 0) == 0) reduced.assign(in.size(), true);
    return reduced;
  }
  for (int64_t a : axes->toInt64Vector()) {
    const int64_t d = normalizeAxis(a, rank, "reduce axis");
    if (reduced[d]) throw ShapeError("reduce axis " + std::to_string(a) + " is given twice");
    reduced[d] = true;
  }
  return reduced;
}

// noop_with_empty_axes = 1 and no axes: the op returns its input unchanged.
bool isNoop(const Tensor* axes, const Attributes& attrs) {
  return (!axes || axes->numel() == 0) && attrs.i("noop_with_empty_axes", 0) != 0;
}

const Tensor* axesInput(const InferContext& ctx) {
  return ctx.hasInput(1) ? &ctx.requireConstInput(1, "Reduce axes") : nullptr;
}

void inferReduce(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const std::vector<bool> reduced = reducedDims(in, axesInput(ctx), ctx.attrs());
  const bool keep = ctx.attrs().i("keepdims", 1) != 0;
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(in[d]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  ctx.setOutput(0, ctx.inputDType(0), out);
}

// ---------------------------------------------------------------- iteration plan

constexpr size_t kMaxReduceDims = 16;

// The input shape with dims of extent 1 dropped and neighbours of the same kind (kept / reduced)
// merged. When at most one reduced group remains it is the "simple" layout [outer, len, inner]
// (len reduced) with output element o * inner + i; otherwise a generic odometer walks the input.
class ReducePlan {
 public:
  ReducePlan(const Shape& in, const std::vector<bool>& reduced) {
    std::vector<int64_t> dims;
    std::vector<bool> kinds;
    for (size_t d = 0; d < in.size(); ++d) {
      if (reduced[d]) count_ *= in[d];
      if (in[d] == 1) continue;
      if (!kinds.empty() && kinds.back() == reduced[d]) {
        dims.back() *= in[d];
      } else {
        dims.push_back(in[d]);
        kinds.push_back(reduced[d]);
      }
    }
    in_numel_ = shapeNumel(in);
    out_numel_ = 1;
    for (size_t d = 0; d < in.size(); ++d) out_numel_ *= reduced[d] ? 1 : in[d];
    int groups = 0;
    for (bool k : kinds) groups += k;
    if (groups <= 1) {
      bool seen = false;
      for (size_t j = 0; j < dims.size(); ++j) {
        if (kinds[j]) {
          len_ = dims[j];
          seen = true;
        } else {
          (seen ? inner_ : outer_) *= dims[j];
        }
      }
      simple_ = true;
      return;
    }
    if (dims.size() > kMaxReduceDims) throw UnsupportedOpError("reduction over too many interleaved axes");
    ndims_ = dims.size();
    int64_t stride = 1;
    for (size_t j = ndims_; j-- > 0;) {
      dims_[j] = dims[j];
      out_strides_[j] = kinds[j] ? 0 : stride;
      if (!kinds[j]) stride *= dims[j];
    }
  }

  int64_t outNumel() const { return out_numel_; }
  int64_t count() const { return count_; }  // reduced elements per output element

  // y[o] = finalize(combine_r map(x[.., r, ..], o), o) for every output element o.
  template <typename T, typename R>
  void run(const T* x, T* y, const R& red) const {
    if (out_numel_ == 0) return;
    if (in_numel_ == 0) {  // reducing empty slices: the reducer's value of the empty set
      for (int64_t o = 0; o < out_numel_; ++o) y[o] = red.finalize(red.init(), o);
      return;
    }
    if (!simple_) {
      runGeneric(x, y, red);
    } else if (inner_ == 1) {
      runRows(x, y, red);
    } else {
      runColumns(x, y, red);
    }
  }

 private:
  // Reduced elements are contiguous: several independent accumulators break the serial
  // dependency on one register so the loop vectorizes (it reorders float sums, like ORT does).
  template <typename T, typename R>
  void runRows(const T* x, T* y, const R& red) const {
    constexpr int64_t kLanes = 8;
    for (int64_t o = 0; o < outer_; ++o) {
      const T* row = x + o * len_;
      std::array<T, kLanes> acc;
      acc.fill(red.init());
      int64_t r = 0;
      for (; r + kLanes <= len_; r += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) acc[j] = red.combine(acc[j], red.map(row[r + j], o));
      }
      T total = red.init();
      for (int64_t j = 0; j < kLanes; ++j) total = red.combine(total, acc[j]);
      for (; r < len_; ++r) total = red.combine(total, red.map(row[r], o));
      y[o] = red.finalize(total, o);
    }
  }

  // Reduced elements are `inner_` apart: accumulate whole rows, vectorized along inner.
  template <typename T, typename R>
  void runColumns(const T* x, T* y, const R& red) const {
    for (int64_t o = 0; o < outer_; ++o) {
      T* yo = y + o * inner_;
      const int64_t base = o * inner_;
      for (int64_t i = 0; i < inner_; ++i) yo[i] = red.init();
      for (int64_t r = 0; r < len_; ++r) {
        const T* row = x + (o * len_ + r) * inner_;
        for (int64_t i = 0; i < inner_; ++i) yo[i] = red.combine(yo[i], red.map(row[i], base + i));
      }
      for (int64_t i = 0; i < inner_; ++i) yo[i] = red.finalize(yo[i], base + i);
    }
  }

  template <typename T, typename R>
  void runGeneric(const T* x, T* y, const R& red) const {
    for (int64_t o = 0; o < out_numel_; ++o) y[o] = red.init();
    std::array<int64_t, kMaxReduceDims> idx{};
    const int64_t len = dims_[ndims_ - 1];
    const int64_t ostep = out_strides_[ndims_ - 1];
    int64_t out = 0;
    for (int64_t base = 0; base < in_numel_; base += len) {
      for (int64_t j = 0; j < len; ++j) {
        const int64_t o = out + j * ostep;
        y[o] = red.combine(y[o], red.map(x[base + j], o));
      }
      for (size_t d = ndims_ - 1; d-- > 0;) {
        if (++idx[d] < dims_[d]) {
          out += out_strides_[d];
          break;
        }
        idx[d] = 0;
        out -= out_strides_[d] * (dims_[d] - 1);
      }
    }
    for (int64_t o = 0; o < out_numel_; ++o) y[o] = red.finalize(y[o], o);
  }

  int64_t in_numel_ = 0, out_numel_ = 0, count_ = 1;
  bool simple_ = false;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  size_t ndims_ = 0;
  std::array<int64_t, kMaxReduceDims> dims_{}, out_strides_{};
};

// ---------------------------------------------------------------- reducers

// Defaults: identity map and finalize; reducers override what they need.
template <typename T>
struct ReducerBase {
  T map(T x, int64_t) const { return x; }
  T finalize(T acc, int64_t) const { return acc; }
};
template <typename T>
struct SumR : ReducerBase<T> {
  T init() const { return T(0); }
  T combine(T a, T b) const { return a + b; }
};
template <typename T>
struct ProdR : ReducerBase<T> {
  T init() const { return T(1); }
  T combine(T a, T b) const { return a * b; }
};
template <typename T>
struct MaxR : ReducerBase<T> {
  T init() const {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  T combine(T a, T b) const { return a < b ? b : a; }
};
template <typename T>
struct MinR : ReducerBase<T> {
  T init() const {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  T combine(T a, T b) const { return b < a ? b : a; }
};
template <typename T>
struct MeanR : SumR<T> {
  T n;
  explicit MeanR(int64_t count) : n(static_cast<T>(count)) {}
  // The mean of nothing is NaN for floats; integers have no NaN and give 0.
  T finalize(T acc, int64_t) const {
    if constexpr (std::is_integral_v<T>) {
      if (n == T(0)) return T(0);
    }
    return acc / n;
  }
};
template <typename T>
struct L1R : SumR<T> {
  T map(T x, int64_t) const { return isNegative(x) ? T(-x) : x; }
};
template <typename T>
struct SumSquareR : SumR<T> {
  T map(T x, int64_t) const { return x * x; }
};
template <typename T>
struct L2R : SumSquareR<T> {
  T finalize(T acc, int64_t) const { return static_cast<T>(std::sqrt(acc)); }
};
template <typename T>
struct LogSumR : SumR<T> {
  T finalize(T acc, int64_t) const { return static_cast<T>(std::log(acc)); }
};
// Second pass of log(sum(exp(x))): exp is taken relative to the per-output max `m` found in a
// first pass, so it cannot overflow. An all -inf slice gives -inf.
template <typename T>
struct LogSumExpR : SumR<T> {
  const T* m;
  explicit LogSumExpR(const T* max) : m(max) {}
  T map(T x, int64_t o) const { return std::isinf(m[o]) ? T(0) : std::exp(x - m[o]); }
  T finalize(T acc, int64_t o) const { return std::isinf(m[o]) ? m[o] : m[o] + std::log(acc); }
};

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const KernelContext& ctx, ReduceKind kind)
      : kind_(kind),
        dtype_(ctx.input_types.at(0).dtype),
        reduced_(reducedDims(ctx.input_types[0].shape, axes(ctx), ctx.node.attrs())),
        identity_(isNoop(axes(ctx), ctx.node.attrs())),
        plan_(ctx.input_types[0].shape, reduced_) {
    dispatchAllNumeric(dtype_, ctx.node.opType().c_str(), [](auto) {});
    if (kind_ == ReduceKind::LogSumExp && !isFloating(dtype_)) {
      throw UnsupportedOpError("ReduceLogSumExp supports float32 and float64 only");
    }
  }
  size_t workspaceBytes() const override {
    // The per-output max of the first pass (sized for the widest type, float64).
    return kind_ == ReduceKind::LogSumExp ? static_cast<size_t>(plan_.outNumel()) * sizeof(double) : 0;
  }
  void run(const KernelIO& io) const override {
    dispatchAllNumeric(dtype_, "Reduce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = io.inputs[0].as<const T>();
      T* y = io.outputs[0].as<T>();
      if (identity_) {  // noop_with_empty_axes: the input itself, not map(x)
        for (int64_t i = 0; i < plan_.outNumel(); ++i) y[i] = x[i];
        return;
      }
      switch (kind_) {
        case ReduceKind::Sum: return plan_.run(x, y, SumR<T>{});
        case ReduceKind::Mean: return plan_.run(x, y, MeanR<T>(plan_.count()));
        case ReduceKind::Max: return plan_.run(x, y, MaxR<T>{});
        case ReduceKind::Min: return plan_.run(x, y, MinR<T>{});
        case ReduceKind::Prod: return plan_.run(x, y, ProdR<T>{});
        case ReduceKind::L1: return plan_.run(x, y, L1R<T>{});
        case ReduceKind::L2: return plan_.run(x, y, L2R<T>{});
        case ReduceKind::SumSquare: return plan_.run(x, y, SumSquareR<T>{});
        case ReduceKind::LogSum: return plan_.run(x, y, LogSumR<T>{});
        case ReduceKind::LogSumExp:
          if constexpr (std::is_floating_point_v<T>) {
            T* max = static_cast<T*>(io.workspace);
            plan_.run(x, max, MaxR<T>{});
            plan_.run(x, y, LogSumExpR<T>(max));
          }
          return;
      }
    });
  }

 private:
  static const Tensor* axes(const KernelContext& ctx) {
    if (!ctx.node.hasInput(1)) return nullptr;
    const Tensor* t = ctx.constInput(1);
    if (!t) throw ShapeError("Reduce axes (input 1) must be a constant");
    return t;
  }

  ReduceKind kind_;
  DType dtype_;
  std::vector<bool> reduced_;
  bool identity_;  // see isNoop()
  ReducePlan plan_;
};

}  // namespace

void registerReduceOps(OpRegistry& reg) {
  const std::vector<DType> numeric = allNumericDTypes();
  const std::vector<DType> floating = {DType::Float32, DType::Float64};
  auto reduce = [&](const char* op, ReduceKind kind, const std::vector<DType>& types,
                    const std::string& formula) {
    return reg.add(op)
        .traits(OpTrait::AxesReduction)
        .inputs(1, 2)
        .infer(inferReduce)
        .kernel([kind](const KernelContext& c) { return std::make_unique<ReduceKernel>(c, kind); })
        .types(types)
        .doc(formula +
             " over `axes` (optional int64 input; empty: all dims, or identity if "
             "noop_with_empty_axes=1); keepdims keeps reduced dims as 1");
  };
  reduce("ReduceSum", ReduceKind::Sum, numeric, "y = sum(x)").quantClass(QuantClass::Float);
  reduce("ReduceMean", ReduceKind::Mean, numeric, "y = sum(x) / count").quantClass(QuantClass::Float);
  reduce("ReduceMax", ReduceKind::Max, numeric, "y = max(x)").quantClass(QuantClass::Float);
  reduce("ReduceMin", ReduceKind::Min, numeric, "y = min(x)").quantClass(QuantClass::Float);
  reduce("ReduceProd", ReduceKind::Prod, numeric, "y = prod(x)").quantClass(QuantClass::Float);
  reduce("ReduceL1", ReduceKind::L1, numeric, "y = sum(|x|)").quantClass(QuantClass::Float);
  reduce("ReduceL2", ReduceKind::L2, floating, "y = sqrt(sum(x^2))").quantClass(QuantClass::Float);
  reduce("ReduceSumSquare", ReduceKind::SumSquare, numeric, "y = sum(x^2)").quantClass(QuantClass::Float);
  reduce("ReduceLogSum", ReduceKind::LogSum, floating, "y = ln(sum(x))").quantClass(QuantClass::Float);
  reduce("ReduceLogSumExp", ReduceKind::LogSumExp, floating, "y = m + ln(sum(exp(x - m))), m = max(x)")
      .quantClass(QuantClass::Float);
}

}  // namespace ew
}  // namespace npuc
