// Softmax and LogSoftmax with the opset-13 semantics: normalized along the single dim `axis`
// (default -1). Numerically stable: the slice max m is subtracted before exponentiating.
//   Softmax:    y = exp(x - m) / sum(exp(x - m))
//   LogSoftmax: y = (x - m) - ln(sum(exp(x - m)))
#include <array>
#include <cmath>

#include "opset/ops/ew_axis.h"
#include "opset/ops/ew_math.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

template <bool kLog>
class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types.at(0).shape;
    split_ = splitAtAxis(in, normalizeAxis(ctx.node.attrs().i("axis", -1), static_cast<int64_t>(in.size())));
  }
  // Per inner lane: running max and sum (only when the axis is not the innermost dim).
  size_t workspaceBytes() const override {
    return split_.inner == 1 ? 0 : 2 * static_cast<size_t>(split_.inner) * sizeof(float);
  }
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    if (split_.len == 0) return;
    if (split_.inner == 1) {
      for (int64_t o = 0; o < split_.outer; ++o) contiguousRow(x + o * split_.len, y + o * split_.len);
    } else {
      float* ws = static_cast<float*>(io.workspace);
      for (int64_t o = 0; o < split_.outer; ++o) {
        const int64_t off = o * split_.len * split_.inner;
        stridedBlock(x + off, y + off, ws, ws + split_.inner);
      }
    }
  }

 private:
  // Independent accumulators so the max / sum loops vectorize.
  static constexpr int64_t kLanes = 8;

  void contiguousRow(const float* x, float* y) const {
    const int64_t n = split_.len;
    std::array<float, kLanes> lane;
    lane.fill(x[0]);
    int64_t r = 0;
    for (; r + kLanes <= n; r += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lane[j] = lane[j] < x[r + j] ? x[r + j] : lane[j];
    }
    float m = x[0];
    for (float v : lane) m = m < v ? v : m;
    for (; r < n; ++r) m = m < x[r] ? x[r] : m;

    for (int64_t i = 0; i < n; ++i) y[i] = fastExp(x[i] - m);
    lane.fill(0.0f);
    for (r = 0; r + kLanes <= n; r += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lane[j] += y[r + j];
    }
    float sum = 0.0f;
    for (float v : lane) sum += v;
    for (; r < n; ++r) sum += y[r];

    if constexpr (kLog) {
      // (x - m) first: it is exact for x near m, so the result keeps its low bits.
      const float log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    }
  }

  // One [len, inner] block: every pass runs along inner, which is contiguous.
  void stridedBlock(const float* x, float* y, float* max, float* sum) const {
    const int64_t len = split_.len, inner = split_.inner;
    for (int64_t i = 0; i < inner; ++i) {
      max[i] = x[i];
      sum[i] = 0.0f;
    }
    for (int64_t r = 1; r < len; ++r) {
      const float* row = x + r * inner;
      for (int64_t i = 0; i < inner; ++i) max[i] = max[i] < row[i] ? row[i] : max[i];
    }
    for (int64_t r = 0; r < len; ++r) {
      const float* row = x + r * inner;
      float* out = y + r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        out[i] = fastExp(row[i] - max[i]);
        sum[i] += out[i];
      }
    }
    if constexpr (kLog) {
      for (int64_t i = 0; i < inner; ++i) sum[i] = std::log(sum[i]);
      for (int64_t r = 0; r < len; ++r) {
        const float* row = x + r * inner;
        float* out = y + r * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] = (row[i] - max[i]) - sum[i];
      }
    } else {
      for (int64_t i = 0; i < inner; ++i) sum[i] = 1.0f / sum[i];
      for (int64_t r = 0; r < len; ++r) {
        float* out = y + r * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] *= sum[i];
      }
    }
  }

  AxisSplit split_;
};

void inferSoftmax(InferContext& ctx) {
  normalizeAxis(ctx.attrs().i("axis", -1), static_cast<int64_t>(ctx.inputShape(0).size()), "Softmax axis");
  inferSameAsInput0(ctx);
}

}  // namespace

void registerSoftmaxOps(OpRegistry& reg) {
  reg.add("Softmax")
      .traits(OpTrait::Transcendental)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferSoftmax)
      .kernel([](const KernelContext& c) { return std::make_unique<SoftmaxKernel<false>>(c); })
      .types({DType::Float32})
      .doc("y = exp(x - m) / sum(exp(x - m)) along `axis` (default -1), m = max along axis");
  reg.add("LogSoftmax")
      .traits(OpTrait::Transcendental)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferSoftmax)
      .kernel([](const KernelContext& c) { return std::make_unique<SoftmaxKernel<true>>(c); })
      .types({DType::Float32})
      .doc("y = (x - m) - ln(sum(exp(x - m))) along `axis` (default -1), m = max along axis");
}

}  // namespace ew
}  // namespace npuc
