// Trilu(x, k = 0): keeps the upper (upper=1, default) or lower triangle of each matrix in the
// last two dims and zeroes the rest. Element (i, j) is kept when j - i >= k (upper) or
// j - i <= k (lower). k is read at run time, so it need not be constant; with a constant x the
// node folds like any other. On an NPU target the lower_trilu pass turns a static-shaped Trilu
// with a constant k into a Mul by a 0/1 mask.
#include <cstring>

#include "opset/ops/attn_ops.h"

namespace npuc {
namespace attn {
namespace {

void inferTrilu(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 2) {
    throw ShapeError("Trilu node '" + ctx.node().name() + "' needs an input of rank >= 2, got shape " +
                     shapeStr(x));
  }
  if (ctx.hasInput(1) && shapeNumel(ctx.inputShape(1)) != 1) {
    throw ShapeError("Trilu node '" + ctx.node().name() + "': k must be a scalar, got shape " +
                     shapeStr(ctx.inputShape(1)));
  }
  inferSameAsInput0(ctx);
}

class TriluKernel : public Kernel {
 public:
  explicit TriluKernel(const KernelContext& ctx)
      : upper_(ctx.node.attrs().i("upper", 1) != 0), elem_(dtypeSize(ctx.input_types.at(0).dtype)) {
    const Shape& s = ctx.input_types[0].shape;
    rows_ = s[s.size() - 2];
    cols_ = s[s.size() - 1];
    mats_ = rows_ * cols_ == 0 ? 0 : shapeNumel(s) / (rows_ * cols_);
    has_k_ = ctx.input_types.size() > 1 && ctx.input_types[1].present();
  }
  void run(const KernelIO& io) const override {
    const int64_t k = has_k_ ? *io.inputs[1].as<const int64_t>() : 0;
    const char* x = io.inputs[0].as<const char>();
    char* y = io.outputs[0].as<char>();
    for (int64_t m = 0; m < mats_; ++m) {
      for (int64_t i = 0; i < rows_; ++i) {
        const size_t row = static_cast<size_t>((m * rows_ + i) * cols_) * elem_;
        for (int64_t j = 0; j < cols_; ++j) {
          const bool keep = upper_ ? j - i >= k : j - i <= k;
          const size_t at = row + static_cast<size_t>(j) * elem_;
          if (keep) {
            std::memcpy(y + at, x + at, elem_);
          } else {
            std::memset(y + at, 0, elem_);  // all-zero bytes are 0 in every dtype (and false)
          }
        }
      }
    }
  }

 private:
  bool upper_;
  size_t elem_;
  int64_t rows_ = 0, cols_ = 0, mats_ = 0;
  bool has_k_ = false;
};

}  // namespace

void registerTriluOp(OpRegistry& reg) {
  reg.add("Trilu")
      .quantClass(QuantClass::Float)
      .inputs(1, 2)
      .infer(inferTrilu)
      .kernel([](const KernelContext& c) { return std::make_unique<TriluKernel>(c); })
      .since(14)
      .cpuOnly(
          "no NPU has a triangle-select instruction; the lower_trilu pass turns a Trilu with a "
          "constant k into a Mul by a constant 0/1 mask, which the NPU runs")
      .doc(
          "upper (upper=1) or lower triangle of the last two dims, k-th diagonal (k may be a "
          "run-time int64 scalar)");
}

}  // namespace attn
}  // namespace npuc
