// MeanVarianceNormalization and LRN, the two normalizations older exports still carry.
//
// MeanVarianceNormalization(X, axes = [0, 2, 3]): (X - mean) / (sqrt(E[X^2] - mean^2) + 1e-9) over
// `axes`, exactly ONNX's function body; the statistics are summed in double and a variance that
// rounds below zero is taken as zero (the function body would give NaN for a constant slice).
//
// LRN(X, size, alpha = 1e-4, beta = 0.75, bias = 1): across channels (dim 1),
// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c +
// ceil((size-1)/2)])^beta.
#include <cmath>

#include "opset/ops/attn_ops.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace attn {
namespace {

std::vector<int64_t> mvnAxes(const Node& node, int64_t rank) {
  std::vector<int64_t> axes = node.attrs().ints("axes", {0, 2, 3});
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    const int64_t n = normalizeAxis(a, rank, "MeanVarianceNormalization axis");
    for (int64_t o : out)
      if (o == n)
        throw ShapeError("MeanVarianceNormalization node '" + node.name() + "' repeats axis " +
                         std::to_string(a));
    out.push_back(n);
  }
  return out;
}

void inferMvn(InferContext& ctx) {
  mvnAxes(ctx.node(), static_cast<int64_t>(ctx.inputShape(0).size()));
  inferSameAsInput0(ctx);
}

class MvnKernel : public Kernel {
 public:
  explicit MvnKernel(const KernelContext& ctx) : shape_(ctx.input_types.at(0).shape) {
    const int64_t rank = static_cast<int64_t>(shape_.size());
    reduced_.assign(static_cast<size_t>(rank), false);
    for (int64_t a : mvnAxes(ctx.node, rank)) reduced_[static_cast<size_t>(a)] = true;
    // Each element maps to the statistics slot of its kept coordinates.
    Shape kept;
    for (int64_t d = 0; d < rank; ++d) kept.push_back(reduced_[static_cast<size_t>(d)] ? 1 : shape_[d]);
    slots_ = shapeNumel(kept);
    const std::vector<int64_t> ks = shapeStrides(kept);
    slot_stride_.assign(static_cast<size_t>(rank), 0);
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced_[static_cast<size_t>(d)])
        slot_stride_[static_cast<size_t>(d)] = ks[static_cast<size_t>(d)];
  }
  // Sums, sums of squares and counts per statistics slot, then the odometer over the input.
  size_t workspaceBytes() const override {
    return static_cast<size_t>(slots_) * 3 * sizeof(double) + shape_.size() * sizeof(int64_t);
  }

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    double* sum = static_cast<double*>(io.workspace);
    double* sq = sum + slots_;
    double* cnt = sq + slots_;
    for (int64_t s = 0; s < 3 * slots_; ++s) sum[s] = 0;
    const int64_t n = shapeNumel(shape_);
    for (int pass = 0; pass < 2; ++pass) {
      int64_t* idx = reinterpret_cast<int64_t*>(cnt + slots_);
      for (size_t d = 0; d < shape_.size(); ++d) idx[d] = 0;
      int64_t slot = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        if (pass == 0) {
          sum[slot] += v;
          sq[slot] += v * v;
          cnt[slot] += 1;
        } else {
          const double mean = sum[slot] / cnt[slot];
          const double var = std::max(0.0, sq[slot] / cnt[slot] - mean * mean);
          y[i] = static_cast<float>((v - mean) / (std::sqrt(var) + 1e-9));
        }
        for (size_t d = shape_.size(); d-- > 0;) {
          slot += slot_stride_[d];
          if (++idx[d] < shape_[d]) break;
          slot -= slot_stride_[d] * shape_[d];
          idx[d] = 0;
        }
      }
    }
  }

 private:
  Shape shape_;
  std::vector<bool> reduced_;
  int64_t slots_ = 0;
  std::vector<int64_t> slot_stride_;
};

void inferLrn(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  const std::string where = "LRN node '" + ctx.node().name() + "'";
  if (x.size() < 3)
    throw ShapeError(where + " needs an input of rank >= 3 (N, C, ...), got shape " + shapeStr(x));
  if (!ctx.attrs().has("size") || ctx.attrs().i("size") < 1)
    throw ShapeError(where + " needs a positive `size` attribute");
  inferSameAsInput0(ctx);
}

class LrnKernel : public Kernel {
 public:
  explicit LrnKernel(const KernelContext& ctx) {
    const Attributes& a = ctx.node.attrs();
    size_ = a.i("size");
    alpha_ = a.f("alpha", 1e-4f);
    beta_ = a.f("beta", 0.75f);
    bias_ = a.f("bias", 1.0f);
    const Shape& s = ctx.input_types.at(0).shape;
    n_ = s[0];
    c_ = s[1];
    inner_ = shapeNumel(s) / std::max<int64_t>(1, n_ * c_);
  }
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    const int64_t lo = (size_ - 1) / 2, hi = size_ / 2;  // floor((size-1)/2), ceil((size-1)/2)
    const double scale = static_cast<double>(alpha_) / static_cast<double>(size_);
    for (int64_t n = 0; n < n_; ++n) {
      const float* xn = x + n * c_ * inner_;
      float* yn = y + n * c_ * inner_;
      for (int64_t c = 0; c < c_; ++c) {
        const int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min<int64_t>(c_ - 1, c + hi);
        for (int64_t i = 0; i < inner_; ++i) {
          double ss = 0;
          for (int64_t k = c0; k <= c1; ++k)
            ss += static_cast<double>(xn[k * inner_ + i]) * xn[k * inner_ + i];
          yn[c * inner_ + i] = static_cast<float>(xn[c * inner_ + i] /
                                                  std::pow(static_cast<double>(bias_) + scale * ss, beta_));
        }
      }
    }
  }

 private:
  int64_t size_ = 1, n_ = 0, c_ = 0, inner_ = 0;
  float alpha_, beta_, bias_;
};

}  // namespace

void registerNormOps(OpRegistry& reg) {
  reg.add("MeanVarianceNormalization")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferMvn)
      .kernel([](const KernelContext& c) { return std::make_unique<MvnKernel>(c); })
      .types({DType::Float32})
      .since(13)
      .cpuOnly(
          "its statistics span the batch and spatial axes (default [0, 2, 3]), a whole-tensor reduction "
          "no SoC profile lists; LayerNormalization/InstanceNormalization are the NPU's normalizations")
      .doc("(X - mean) / (sqrt(E[X^2] - mean^2) + 1e-9) over `axes` (default [0, 2, 3])");
  reg.add("LRN")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferLrn)
      .kernel([](const KernelContext& c) { return std::make_unique<LrnKernel>(c); })
      .types({DType::Float32})
      .since(13)
      .cpuOnly(
          "a cross-channel window raised to a fractional power; RKNN lists LRN but publishes no limits "
          "for it, and npuc will not guess them for an op only AlexNet-era nets use")
      .doc("local response normalization across channels: x / (bias + alpha/size * sum x^2)^beta");
}

}  // namespace attn
}  // namespace npuc
