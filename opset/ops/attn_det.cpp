// Det(X): the determinant of each square matrix in the last two dims, [*, M, M] -> [*].
// LU factorisation with partial pivoting in double (so a float32 result is correctly rounded for
// well-conditioned matrices); a singular matrix gives 0 (or -0), as numpy.linalg.det does.
#include <cmath>
#include <utility>

#include "opset/ops/attn_ops.h"

namespace npuc {
namespace attn {
namespace {

void inferDet(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2]) {
    throw ShapeError("Det node '" + ctx.node().name() +
                     "' needs square matrices in the last two dims, got shape " + shapeStr(x));
  }
  ctx.setOutput(0, ctx.inputDType(0), Shape(x.begin(), x.end() - 2));
}

class DetKernel : public Kernel {
 public:
  explicit DetKernel(const KernelContext& ctx) : dtype_(ctx.input_types.at(0).dtype) {
    const Shape& s = ctx.input_types[0].shape;
    m_ = s.back();
    count_ = m_ == 0 ? shapeNumel(Shape(s.begin(), s.end() - 2)) : shapeNumel(s) / (m_ * m_);
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(m_ * m_) * sizeof(double); }

  void run(const KernelIO& io) const override {
    if (dtype_ == DType::Float64) {
      runTyped(io.inputs[0].as<const double>(), io.outputs[0].as<double>(),
               static_cast<double*>(io.workspace));
    } else {
      runTyped(io.inputs[0].as<const float>(), io.outputs[0].as<float>(), static_cast<double*>(io.workspace));
    }
  }

 private:
  template <typename T>
  void runTyped(const T* x, T* y, double* a) const {
    const int64_t m = m_;
    for (int64_t b = 0; b < count_; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(x[b * m * m + i]);
      double det = 1.0;
      for (int64_t c = 0; c < m; ++c) {
        int64_t p = c;
        for (int64_t r = c + 1; r < m; ++r)
          if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
        if (a[p * m + c] == 0.0) {
          det = 0.0;
          break;
        }
        if (p != c) {
          for (int64_t k = 0; k < m; ++k) std::swap(a[c * m + k], a[p * m + k]);
          det = -det;
        }
        const double piv = a[c * m + c];
        det *= piv;
        for (int64_t r = c + 1; r < m; ++r) {
          const double f = a[r * m + c] / piv;
          for (int64_t k = c + 1; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
        }
      }
      y[b] = static_cast<T>(det);
    }
  }

  DType dtype_;
  int64_t m_ = 0, count_ = 0;
};

}  // namespace

void registerDetOp(OpRegistry& reg) {
  reg.add("Det")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferDet)
      .kernel([](const KernelContext& c) { return std::make_unique<DetKernel>(c); })
      .types({DType::Float32, DType::Float64})
      .since(11)
      .cpuOnly("pivoting picks rows by value (data-dependent control flow); an NPU runs fixed dataflow only")
      .doc("determinant of each matrix in the last two dims (LU with partial pivoting, in double)");
}

}  // namespace attn
}  // namespace npuc
