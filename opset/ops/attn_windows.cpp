// The signal windows and the mel filter bank: ops whose output depends only on scalar inputs.
// Their sizes must be constants (npuc compiles static shapes), so with constant inputs (the only
// form that compiles) constant folding turns each into a constant tensor and nothing runs at all.
//
//   HannWindow(size)     0.5 - 0.5 cos(2 pi n / N)
//   HammingWindow(size)  25/46 - 21/46 cos(2 pi n / N)
//   BlackmanWindow(size) 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
//   N = size (periodic = 1, the default) or size - 1 (periodic = 0, symmetric).
//   MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
//     [dft_length / 2 + 1, num_mel_bins] triangular filters on the mel scale, following the
//     algorithm ONNX's operator documentation gives (bin edges floored to integer DFT bins).
// output_datatype (ONNX type code, default float) picks the output element type.
#include <cmath>

#include "opset/ops/attn_ops.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace attn {
namespace {

DType outputType(const Node& node) {
  const DType t = dtypeFromOnnx(static_cast<int32_t>(node.attrs().i("output_datatype", 1)));
  if (t != DType::Float32 && t != DType::Float64 && t != DType::Int32 && t != DType::Int64) {
    throw UnsupportedOpError(node.opType() + " node '" + node.name() + "': output_datatype " + dtypeName(t) +
                             " is not supported (float32, float64, int32, int64)");
  }
  return t;
}

int64_t scalarInput(const InferContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.requireConstInput(i, what);
  if (t.numel() != 1)
    throw ShapeError(ctx.node().opType() + " node '" + ctx.node().name() + "': " + what +
                     " must be a scalar");
  return t.intAt(0);
}

template <typename T>
void store(const double* v, int64_t n, void* out) {
  T* y = static_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(v[i]);
}

void storeAs(DType t, const double* v, int64_t n, void* out) {
  switch (t) {
    case DType::Float64: return store<double>(v, n, out);
    case DType::Int32: return store<int32_t>(v, n, out);
    case DType::Int64: return store<int64_t>(v, n, out);
    default: return store<float>(v, n, out);
  }
}

// ---------------------------------------------------------------- windows

struct Cosines {
  double a0, a1, a2;
};

void inferWindow(InferContext& ctx) {
  const int64_t size = scalarInput(ctx, 0, "window size");
  if (size < 0)
    throw ShapeError(ctx.node().opType() + " node '" + ctx.node().name() + "': size " + std::to_string(size) +
                     " is negative");
  ctx.setOutput(0, outputType(ctx.node()), {size});
}

class WindowKernel : public Kernel {
 public:
  WindowKernel(const KernelContext& ctx, Cosines c)
      : c_(c),
        periodic_(ctx.node.attrs().i("periodic", 1) != 0),
        out_(outputType(ctx.node)),
        size_(ctx.output_types.at(0).shape.at(0)) {}
  size_t workspaceBytes() const override { return static_cast<size_t>(size_) * sizeof(double); }
  void run(const KernelIO& io) const override {
    const int64_t size = io.outputs[0].shape[0];
    const double n_div = periodic_ ? static_cast<double>(size) : static_cast<double>(size - 1);
    double* v = static_cast<double*>(io.workspace);
    for (int64_t n = 0; n < size; ++n) {
      const double t = n_div > 0 ? 2.0 * M_PI * static_cast<double>(n) / n_div : 0.0;
      v[n] = c_.a0 - c_.a1 * std::cos(t) + c_.a2 * std::cos(2.0 * t);
    }
    storeAs(out_, v, size, io.outputs[0].data);
  }

 private:
  Cosines c_;
  bool periodic_;
  DType out_;
  int64_t size_;
};

// ---------------------------------------------------------------- mel filter bank

void inferMel(InferContext& ctx) {
  const int64_t bins = scalarInput(ctx, 0, "num_mel_bins");
  const int64_t dft = scalarInput(ctx, 1, "dft_length");
  if (bins < 1 || dft < 1)
    throw ShapeError("MelWeightMatrix node '" + ctx.node().name() +
                     "': num_mel_bins and dft_length must be positive");
  ctx.setOutput(0, outputType(ctx.node()), {dft / 2 + 1, bins});
}

class MelKernel : public Kernel {
 public:
  explicit MelKernel(const KernelContext& ctx)
      : out_(outputType(ctx.node)), shape_(ctx.output_types.at(0).shape) {}
  // The weights in double, then the bin edges.
  size_t workspaceBytes() const override {
    return static_cast<size_t>(shapeNumel(shape_) + shape_[1] + 2) * sizeof(double);
  }
  void run(const KernelIO& io) const override {
    const int64_t bins = io.outputs[0].shape[1], spec_bins = io.outputs[0].shape[0];
    auto scalar = [&](size_t i) {
      const TensorView& t = io.inputs[i];
      switch (t.dtype) {
        case DType::Int32: return static_cast<double>(*t.as<const int32_t>());
        case DType::Int64: return static_cast<double>(*t.as<const int64_t>());
        case DType::Float64: return *t.as<const double>();
        default: return static_cast<double>(*t.as<const float>());
      }
    };
    const double dft = scalar(1), rate = scalar(2), lo = scalar(3), hi = scalar(4);
    auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double mel_lo = toMel(lo), step = (toMel(hi) - mel_lo) / static_cast<double>(bins + 2);
    double* w = static_cast<double*>(io.workspace);
    int64_t* edge = reinterpret_cast<int64_t*>(w + spec_bins * bins);
    for (int64_t i = 0; i < bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + mel_lo) / 2595.0) - 1.0);
      edge[i] = static_cast<int64_t>(std::floor((dft + 1.0) * hz / rate));
    }
    for (int64_t i = 0; i < spec_bins * bins; ++i) w[i] = 0.0;
    auto at = [&](int64_t j, int64_t i) -> double* {
      if (j < 0 || j >= spec_bins) return nullptr;  // an edge past the spectrum contributes nothing
      return &w[j * bins + i];
    };
    for (int64_t i = 0; i < bins; ++i) {
      const int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
      if (c == l) {
        if (double* p = at(c, i)) *p = 1.0;
      } else {
        for (int64_t j = l; j <= c; ++j)
          if (double* p = at(j, i)) *p = static_cast<double>(j - l) / static_cast<double>(c - l);
      }
      for (int64_t j = c; j < h; ++j)
        if (double* p = at(j, i)) *p = static_cast<double>(h - j) / static_cast<double>(h - c);
    }
    storeAs(out_, w, spec_bins * bins, io.outputs[0].data);
  }

 private:
  DType out_;
  Shape shape_;
};

constexpr const char* kFoldsReason =
    "its output depends only on its (constant) scalar inputs, so constant folding replaces it by a "
    "tensor before partitioning";

void addWindow(OpRegistry& reg, const char* op, Cosines c, const char* doc) {
  reg.add(op)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferWindow)
      .kernel([c](const KernelContext& k) { return std::make_unique<WindowKernel>(k, c); })
      .types({DType::Int32, DType::Int64})
      .since(17)
      .cpuOnly(kFoldsReason)
      .doc(doc);
}

}  // namespace

void registerWindowOps(OpRegistry& reg) {
  addWindow(reg, "HannWindow", {0.5, 0.5, 0.0},
            "0.5 - 0.5 cos(2 pi n / N); periodic (N = size) or symmetric");
  addWindow(reg, "HammingWindow", {25.0 / 46.0, 21.0 / 46.0, 0.0},
            "25/46 - 21/46 cos(2 pi n / N); periodic (N = size) or symmetric");
  addWindow(reg, "BlackmanWindow", {0.42, 0.5, 0.08},
            "0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N); periodic (N = size) or symmetric");
  reg.add("MelWeightMatrix")
      .quantClass(QuantClass::Float)
      .inputs(5)
      .infer(inferMel)
      .kernel([](const KernelContext& k) { return std::make_unique<MelKernel>(k); })
      .types({DType::Int32, DType::Int64})
      .since(17)
      .cpuOnly(kFoldsReason)
      .doc("[dft_length/2 + 1, num_mel_bins] triangular mel filter bank (ONNX's algorithm)");
}

}  // namespace attn
}  // namespace npuc
