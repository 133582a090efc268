// Simulator steps of the element-wise ops at 16-bit activations (quant/binary_requant_wide.h):
// Add and Mul with numpy broadcasting, Concat (inputs rescaled onto the output grid when their
// parameters differ); GlobalAveragePool is eltwise_steps.cpp's step for both widths.
#include "opset/registry.h"
#include "quant/binary_requant_wide.h"
#include "quant/requant_wide.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

namespace {

std::string nodeLabel(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

// Flat offset into an input broadcast (right-aligned, numpy rules) to the output shape.
class BroadcastOffsets {
 public:
  BroadcastOffsets(const Shape& in, const Shape& out) : out_(out), strides_(out.size(), 0) {
    const std::vector<int64_t> in_strides = shapeStrides(in);
    const size_t offset = out.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i) strides_[offset + i] = in[i] == 1 ? 0 : in_strides[i];
    same_ = in == out;
  }
  int64_t operator()(int64_t flat) const {
    if (same_) return flat;
    int64_t idx = 0;
    for (size_t d = out_.size(); d-- > 0;) {
      idx += (flat % out_[d]) * strides_[d];
      flat /= out_[d];
    }
    return idx;
  }

 private:
  Shape out_;
  std::vector<int64_t> strides_;
  bool same_ = false;
};

template <typename Requant, int16_t (*Op)(int16_t, int16_t, const Requant&)>
class WideBinaryStep : public SimStep {
 public:
  WideBinaryStep(const StepContext& ctx, Requant r)
      : SimStep(ctx.inputs, ctx.outputs),
        requant_(r),
        shape_(ctx.node.output(0)->shape()),
        params_(ctx.paramsOf(ctx.node.output(0))),
        index_a_(ctx.node.input(0)->shape(), shape_),
        index_b_(ctx.node.input(1)->shape(), shape_) {}
  void run(SimSlots& slots) const override {
    const int16_t* a = in(slots, 0).tensor.template data<int16_t>();
    const int16_t* b = in(slots, 1).tensor.template data<int16_t>();
    SimValue y{Tensor::uninitialized(DType::Int16, shape_), true, params_};
    int16_t* dst = y.tensor.template data<int16_t>();
    const int64_t n = y.tensor.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = Op(a[index_a_(i)], b[index_b_(i)], requant_);
    out(slots, 0) = std::move(y);
  }

 private:
  Requant requant_;
  Shape shape_;
  QuantParams params_;
  BroadcastOffsets index_a_, index_b_;
};

class WideConcatStep : public SimStep {
 public:
  explicit WideConcatStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    shape_ = n.output(0)->shape();
    params_ = ctx.paramsOf(n.output(0));
    const int64_t axis = normalizeAxis(n.attrs().i("axis"), static_cast<int64_t>(shape_.size()));
    for (int64_t d = 0; d < axis; ++d) outer_ *= shape_[static_cast<size_t>(d)];
    for (const Value* v : n.inputs()) {
      rescale_.push_back(makeWideRescale(ctx.paramsOf(v), params_, nodeLabel(n).c_str()));
      int64_t chunk = 1;  // contiguous elements of one outer row
      for (size_t d = static_cast<size_t>(axis); d < v->shape().size(); ++d) chunk *= v->shape()[d];
      chunks_.push_back(chunk);
    }
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int16, shape_), true, params_};
    int16_t* dst = y.tensor.data<int16_t>();
    int64_t row = 0;
    for (int64_t c : chunks_) row += c;
    int64_t offset = 0;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      const int16_t* src = in(slots, i).tensor.data<int16_t>();
      for (int64_t o = 0; o < outer_; ++o) {
        for (int64_t j = 0; j < chunks_[i]; ++j)
          dst[o * row + offset + j] = rescaleInt16(src[o * chunks_[i] + j], rescale_[i]);
      }
      offset += chunks_[i];
    }
    out(slots, 0) = std::move(y);
  }

 private:
  Shape shape_;
  QuantParams params_;
  int64_t outer_ = 1;
  std::vector<WideRescale> rescale_;
  std::vector<int64_t> chunks_;
};

}  // namespace

std::unique_ptr<SimStep> makeWideAddStep(const StepContext& ctx) {
  const Node& n = ctx.node;
  return std::make_unique<WideBinaryStep<WideAddRequant, addInt16>>(
      ctx, makeWideAddRequant(ctx.paramsOf(n.input(0)), ctx.paramsOf(n.input(1)), ctx.paramsOf(n.output(0)),
                              nodeLabel(n).c_str()));
}
std::unique_ptr<SimStep> makeWideMulStep(const StepContext& ctx) {
  const Node& n = ctx.node;
  return std::make_unique<WideBinaryStep<WideMulRequant, mulInt16>>(
      ctx, makeWideMulRequant(ctx.paramsOf(n.input(0)), ctx.paramsOf(n.input(1)), ctx.paramsOf(n.output(0)),
                              nodeLabel(n).c_str()));
}
std::unique_ptr<SimStep> makeWideConcatStep(const StepContext& ctx) {
  return std::make_unique<WideConcatStep>(ctx);
}

}  // namespace npuc::quant
