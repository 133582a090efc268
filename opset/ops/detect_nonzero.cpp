// NonZero(X) -> int64 [rank, nnz]: the indices of the non-zero elements, in row-major order (one
// row per dimension; a scalar counts as a 1-element vector). -0.0 is zero, NaN is non-zero.
// With a constant X the count is exact (and the node folds); otherwise dim 1 is bounded by
// numel and the columns past the result are -1 (opset/bounded_output.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "opset/bounded_output.h"
#include "opset/ops/detect_ops.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace detect {
namespace {

// Whether element i of `data` is non-zero: by value for floats (so -0.0 is zero), by its bytes
// for integers and bool.
bool nonZeroAt(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float32: return static_cast<const float*>(data)[i] != 0.0f;
    case DType::Float64: return static_cast<const double*>(data)[i] != 0.0;
    case DType::Float16: return (static_cast<const uint16_t*>(data)[i] & 0x7fff) != 0;
    default: {
      const size_t es = dtypeSize(dtype);
      const auto* p = static_cast<const uint8_t*>(data) + static_cast<size_t>(i) * es;
      for (size_t b = 0; b < es; ++b) {
        if (p[b]) return true;
      }
      return false;
    }
  }
}

Shape asAtLeast1D(const Shape& s) {
  return s.empty() ? Shape{1} : s;
}

void inferNonZero(InferContext& ctx) {
  const Shape s = asAtLeast1D(ctx.inputShape(0));
  const auto rank = static_cast<int64_t>(s.size());
  int64_t cols = shapeNumel(s);  // the bound when the data is not known
  if (const Tensor* x = ctx.constInput(0)) {
    cols = 0;
    for (int64_t i = 0; i < x->numel(); ++i) cols += nonZeroAt(x->raw(), x->dtype(), i) ? 1 : 0;
  }
  ctx.setOutput(0, DType::Int64, {rank, cols});
}

class NonZeroKernel : public Kernel {
 public:
  explicit NonZeroKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype),
        shape_(asAtLeast1D(ctx.input_types[0].shape)),
        cols_(ctx.output_types.at(0).shape.at(1)) {
    if (dtypeSize(dtype_) == 0)
      throw UnsupportedOpError("NonZero: element type " + std::string(dtypeName(dtype_)) +
                               " is not supported");
  }
  void run(const KernelIO& io) const override {
    const void* x = io.inputs[0].data;
    int64_t* out = io.outputs[0].as<int64_t>();
    const auto rank = static_cast<int64_t>(shape_.size());
    const int64_t n = shapeNumel(shape_);
    int64_t col = 0;
    for (int64_t i = 0; i < n && col < cols_; ++i) {
      if (!nonZeroAt(x, dtype_, i)) continue;
      int64_t rest = i;
      for (int64_t d = rank - 1; d >= 0; --d) {
        out[d * cols_ + col] = rest % shape_[static_cast<size_t>(d)];
        rest /= shape_[static_cast<size_t>(d)];
      }
      ++col;
    }
    for (int64_t d = 0; d < rank; ++d) std::fill(out + d * cols_ + col, out + (d + 1) * cols_, int64_t{-1});
  }

 private:
  DType dtype_;
  Shape shape_;
  int64_t cols_;
};

}  // namespace

void registerNonZeroOp(OpRegistry& reg) {
  reg.add("NonZero")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferNonZero)
      .kernel([](const KernelContext& c) { return std::make_unique<NonZeroKernel>(c); })
      .since(9)
      .cpuOnly("its output size depends on the data")
      // Columns (one per non-zero element) depend on the input unless it is a constant.
      .boundedOutput([](const Node& n) { return inputIsConstant(n, 0) ? -1 : 1; })
      .doc(
          "int64 [rank, nnz] indices of the non-zero elements; with a computed input the output is bounded "
          "(numel columns, trimmed by the runtimes) and must be a graph output");
}

}  // namespace detect
}  // namespace npuc
