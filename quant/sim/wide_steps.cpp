// Simulator steps of the MAC ops at 16-bit activations (w8a16, w16a16i, w16a16i_dfp, w4a16):
// weights, group multipliers and int64 biases are quantized here once with the functions the
// quantizer used (quantizeNodeWeights), so the plan and the kernels agree by construction.
#include "quant/graph/quantizer.h"
#include "quant/requant_wide.h"
#include "quant/scheme_weights.h"
#include "quant/sim/sim_step.h"
#include "quant/sim/wide_mac.h"

namespace npuc::quant {

namespace {

std::string nodeLabel(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

std::vector<FixedPointMultiplier> wideMultipliers(float s_x, const std::vector<float>& s_w, float s_y,
                                                  const std::string& what) {
  std::vector<FixedPointMultiplier> m;
  for (float s : s_w) m.push_back(quantizeWideMultiplier(double{s_x} * s / s_y, what.c_str()));
  return m;
}

std::vector<int64_t> wideBias(const Node& n, const QuantPlan& plan, float s_x,
                              const std::vector<float>& s_w) {
  return nodeBiasIntegers(n, plan, s_x, s_w);
}

// The quantized weight values widened to int16, in the tensor's own order.
std::vector<int16_t> widened(const Tensor& values) {
  std::vector<int16_t> w(static_cast<size_t>(values.numel()));
  for (int64_t i = 0; i < values.numel(); ++i) {
    w[static_cast<size_t>(i)] =
        values.dtype() == DType::Int16 ? values.data<int16_t>()[i] : int16_t{values.data<int8_t>()[i]};
  }
  return w;
}

class WideConvStep : public SimStep {
 public:
  explicit WideConvStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const QuantParams px = ctx.paramsOf(n.input(0));
    py_ = ctx.paramsOf(n.output(0));
    const QuantizedWeights qw = quantizeNodeWeights(n, *ctx.plan);
    p_.geometry = convGeometryOf(n);
    p_.weights = widened(qw.values);
    p_.bias = wideBias(n, *ctx.plan, px.scale, qw.scales);
    p_.groups = WeightGroups{qw.group_size, qw.group_multipliers};
    p_.input_zero_point = px.zero_point;
    p_.multipliers = wideMultipliers(px.scale, qw.scales, py_.scale, nodeLabel(n));
    p_.output_zero_point = py_.zero_point;
    validateWideConv(p_, nodeLabel(n));
    shape_ = n.output(0)->shape();
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int16, shape_), true, py_};
    const int16_t* x = in(slots, 0).tensor.data<int16_t>();
    if (path_ == SimPath::Reference) {
      wideConvReference(p_, x, y.tensor.data<int16_t>());
    } else {
      wideConvFast(p_, x, y.tensor.data<int16_t>());
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  WideConvParams p_;
  QuantParams py_;
  Shape shape_;
};

class WideLinearStep : public SimStep {
 public:
  explicit WideLinearStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const QuantParams px = ctx.paramsOf(n.input(0));
    py_ = ctx.paramsOf(n.output(0));
    const QuantizedWeights qw = quantizeNodeWeights(n, *ctx.plan);
    const Shape& x = n.input(0)->shape();
    p_.depth = x.back();
    p_.columns = n.output(0)->shape().back();
    p_.rows = shapeNumel(x) / p_.depth;
    // [N, K] rows whatever the op's layout: Gemm transB = 1 already is.
    const std::vector<int16_t> w = widened(qw.values);
    if (n.opType() == "Gemm" && n.attrs().i("transB", 0) != 0) {
      p_.weights = w;
    } else {
      p_.weights.resize(w.size());
      for (int64_t k = 0; k < p_.depth; ++k)
        for (int64_t j = 0; j < p_.columns; ++j)
          p_.weights[static_cast<size_t>(j * p_.depth + k)] = w[static_cast<size_t>(k * p_.columns + j)];
    }
    p_.bias = wideBias(n, *ctx.plan, px.scale, qw.scales);
    p_.groups = WeightGroups{qw.group_size, qw.group_multipliers};
    p_.input_zero_point = px.zero_point;
    p_.multipliers = wideMultipliers(px.scale, qw.scales, py_.scale, nodeLabel(n));
    p_.output_zero_point = py_.zero_point;
    validateWideLinear(p_, nodeLabel(n));
    shape_ = n.output(0)->shape();
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int16, shape_), true, py_};
    const int16_t* x = in(slots, 0).tensor.data<int16_t>();
    if (path_ == SimPath::Reference) {
      wideLinearReference(p_, x, y.tensor.data<int16_t>());
    } else {
      wideLinearFast(p_, x, y.tensor.data<int16_t>());
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  WideLinearParams p_;
  QuantParams py_;
  Shape shape_;
};

class WideBatchMatMulStep : public SimStep {
 public:
  explicit WideBatchMatMulStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const Shape& a = n.input(0)->shape();
    const Shape& b = n.input(1)->shape();
    const QuantParams pa = ctx.paramsOf(n.input(0)), pb = ctx.paramsOf(n.input(1));
    py_ = ctx.paramsOf(n.output(0));
    p_.m = a[a.size() - 2];
    p_.k = a.back();
    p_.n = b.back();
    p_.batch = shapeNumel(a) / (p_.m * p_.k);
    p_.zero_point_a = pa.zero_point;
    p_.zero_point_b = pb.zero_point;
    p_.multiplier = quantizeWideMultiplier(double{pa.scale} * pb.scale / py_.scale, nodeLabel(n).c_str());
    p_.output_zero_point = py_.zero_point;
    shape_ = n.output(0)->shape();
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int16, shape_), true, py_};
    const int16_t* a = in(slots, 0).tensor.data<int16_t>();
    const int16_t* b = in(slots, 1).tensor.data<int16_t>();
    if (path_ == SimPath::Reference) {
      wideBatchMatMulReference(p_, a, b, y.tensor.data<int16_t>());
    } else {
      wideBatchMatMulFast(p_, a, b, y.tensor.data<int16_t>());
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  WideBatchMatMulParams p_;
  QuantParams py_;
  Shape shape_;
};

}  // namespace

std::unique_ptr<SimStep> makeWideConvStep(const StepContext& ctx) {
  return std::make_unique<WideConvStep>(ctx);
}
std::unique_ptr<SimStep> makeWideLinearStep(const StepContext& ctx) {
  return std::make_unique<WideLinearStep>(ctx);
}
std::unique_ptr<SimStep> makeWideBatchMatMulStep(const StepContext& ctx) {
  return std::make_unique<WideBatchMatMulStep>(ctx);
}

}  // namespace npuc::quant
