// Simulator steps of the multiply-accumulate ops: Conv, Gemm / MatMul with constant weights,
// and MatMul of two activations. Weights and biases are quantized here once, with the same
// functions the quantizer used, so the plan's scales and the kernel's agree by construction.
#include <vector>

#include "common/error.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/int8_conv.h"
#include "quant/sim/int8_linear.h"
#include "quant/sim/scratch.h"
#include "quant/sim/sim_step.h"
#include "quant/sim/wide_mac.h"

namespace npuc::quant {

namespace {

std::string nodeLabel(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

// Per-channel multipliers s_x * s_w[c] / s_y, each computed in double.
std::vector<FixedPointMultiplier> channelMultipliers(float s_x, const std::vector<float>& s_w, float s_y,
                                                     const std::string& what) {
  std::vector<FixedPointMultiplier> m;
  m.reserve(s_w.size());
  for (float s : s_w) m.push_back(quantizeMultiplier(double{s_x} * s / s_y, what.c_str()));
  return m;
}

// int32 here: nodeBiasIntegers gives the int32 quantizeBias values, or an imported file's int32s.
std::vector<int32_t> nodeBias(const Node& n, const QuantPlan& plan, float s_x,
                              const std::vector<float>& s_w) {
  const std::vector<int64_t> b = nodeBiasIntegers(n, plan, s_x, s_w);
  return std::vector<int32_t>(b.begin(), b.end());
}

// Explicit pads of one spatial axis, resolving auto_pad from the known output size.
std::pair<int64_t, int64_t> beginPad(const Node& n, size_t axis, int64_t in, int64_t out, int64_t k,
                                     int64_t s, int64_t d) {
  const std::string auto_pad = n.attrs().s("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = n.attrs().ints("pads", {0, 0, 0, 0});
    return {pads.at(axis), pads.at(axis + 2)};
  }
  if (auto_pad == "VALID") return {0, 0};
  const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
  const int64_t first = auto_pad == "SAME_LOWER" ? (total + 1) / 2 : total / 2;
  return {first, total - first};
}

}  // namespace

ConvGeometry convGeometryOf(const Node& n) {
  const Shape& x = n.input(0)->shape();
  const Shape& w = n.input(1)->shape();
  const Shape& y = n.output(0)->shape();
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.in_h = x[2];
  g.in_w = x[3];
  g.out_channels = y[1];
  g.out_h = y[2];
  g.out_w = y[3];
  g.kernel_h = w[2];
  g.kernel_w = w[3];
  const std::vector<int64_t> strides = n.attrs().ints("strides", {1, 1});
  const std::vector<int64_t> dilations = n.attrs().ints("dilations", {1, 1});
  g.stride_h = strides.at(0);
  g.stride_w = strides.at(1);
  g.dilation_h = dilations.at(0);
  g.dilation_w = dilations.at(1);
  g.groups = n.attrs().i("group", 1);
  g.pad_top = beginPad(n, 0, g.in_h, g.out_h, g.kernel_h, g.stride_h, g.dilation_h).first;
  g.pad_left = beginPad(n, 1, g.in_w, g.out_w, g.kernel_w, g.stride_w, g.dilation_w).first;
  return g;
}

namespace {

class ConvStep : public SimStep {
 public:
  explicit ConvStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const QuantParams px = ctx.paramsOf(n.input(0));
    const QuantParams py = ctx.paramsOf(n.output(0));
    QuantizedWeights qw = quantizeNodeWeights(n, *ctx.plan);
    Int8ConvParams p;
    p.geometry = convGeometryOf(n);
    const int8_t* w = qw.values.data<int8_t>();
    p.weights.assign(w, w + qw.values.numel());
    p.bias = nodeBias(n, *ctx.plan, px.scale, qw.scales);
    p.input_zero_point = px.zero_point;
    p.multipliers = channelMultipliers(px.scale, qw.scales, py.scale, nodeLabel(n));
    p.output_zero_point = py.zero_point;
    validateInt8Conv(p, nodeLabel(n));
    output_shape_ = n.output(0)->shape();
    output_params_ = py;
    fast_ = std::make_unique<Int8ConvFast>(std::move(p));
  }
  void run(SimSlots& slots) const override {
    const SimValue& x = in(slots, 0);
    SimValue y{Tensor::uninitialized(DType::Int8, output_shape_), true, output_params_};
    if (path_ == SimPath::Reference) {
      int8ConvReference(fast_->params(), x.tensor.data<int8_t>(), y.tensor.data<int8_t>());
    } else {
      fast_->run(x.tensor.data<int8_t>(), y.tensor.data<int8_t>(), threadScratch(fast_->workspaceBytes()));
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  Shape output_shape_;
  QuantParams output_params_;
  std::unique_ptr<Int8ConvFast> fast_;  // also holds the parameters the reference reads
};

// Weights as [N, K] rows whatever the op's layout.
std::vector<int8_t> weightRows(const Node& n, const Tensor& q, int64_t k, int64_t cols) {
  const int8_t* w = q.data<int8_t>();
  const bool already_rows = n.opType() == "Gemm" && n.attrs().i("transB", 0) != 0;
  if (already_rows) return std::vector<int8_t>(w, w + q.numel());
  std::vector<int8_t> rows(static_cast<size_t>(k * cols));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < cols; ++j) rows[static_cast<size_t>(j * k + i)] = w[i * cols + j];
  return rows;
}

class LinearStep : public SimStep {
 public:
  explicit LinearStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const QuantParams px = ctx.paramsOf(n.input(0));
    const QuantParams py = ctx.paramsOf(n.output(0));
    QuantizedWeights qw = quantizeNodeWeights(n, *ctx.plan);
    const Shape& x = n.input(0)->shape();
    Int8LinearParams p;
    p.depth = x.back();
    p.columns = n.output(0)->shape().back();
    p.rows = shapeNumel(x) / p.depth;
    p.weights = weightRows(n, qw.values, p.depth, p.columns);
    p.bias = nodeBias(n, *ctx.plan, px.scale, qw.scales);
    p.input_zero_point = px.zero_point;
    p.multipliers = channelMultipliers(px.scale, qw.scales, py.scale, nodeLabel(n));
    p.output_zero_point = py.zero_point;
    validateInt8Linear(p, nodeLabel(n));
    output_shape_ = n.output(0)->shape();
    output_params_ = py;
    params_ = p;
    fast_ = std::make_unique<Int8LinearFast>(std::move(p));
  }
  void run(SimSlots& slots) const override {
    const SimValue& x = in(slots, 0);
    SimValue y{Tensor::uninitialized(DType::Int8, output_shape_), true, output_params_};
    if (path_ == SimPath::Reference) {
      int8LinearReference(params_, x.tensor.data<int8_t>(), y.tensor.data<int8_t>());
    } else {
      fast_->run(x.tensor.data<int8_t>(), y.tensor.data<int8_t>(), threadScratch(fast_->workspaceBytes()));
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  Shape output_shape_;
  QuantParams output_params_;
  Int8LinearParams params_;
  std::unique_ptr<Int8LinearFast> fast_;
};

class BatchMatMulStep : public SimStep {
 public:
  explicit BatchMatMulStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), path_(ctx.path) {
    const Node& n = ctx.node;
    const Shape& a = n.input(0)->shape();
    const Shape& b = n.input(1)->shape();
    const QuantParams pa = ctx.paramsOf(n.input(0));
    const QuantParams pb = ctx.paramsOf(n.input(1));
    const QuantParams py = ctx.paramsOf(n.output(0));
    p_.m = a[a.size() - 2];
    p_.k = a.back();
    p_.n = b.back();
    p_.batch = shapeNumel(a) / (p_.m * p_.k);
    p_.zero_point_a = pa.zero_point;
    p_.zero_point_b = pb.zero_point;
    p_.multiplier = quantizeMultiplier(double{pa.scale} * pb.scale / py.scale, nodeLabel(n).c_str());
    p_.output_zero_point = py.zero_point;
    validateInt8BatchMatMul(p_, nodeLabel(n));
    output_shape_ = n.output(0)->shape();
    output_params_ = py;
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int8, output_shape_), true, output_params_};
    const int8_t* a = in(slots, 0).tensor.data<int8_t>();
    const int8_t* b = in(slots, 1).tensor.data<int8_t>();
    if (path_ == SimPath::Reference) {
      int8BatchMatMulReference(p_, a, b, y.tensor.data<int8_t>());
    } else {
      int8BatchMatMulFast(p_, a, b, y.tensor.data<int8_t>(),
                          threadScratch(int8BatchMatMulWorkspaceBytes(p_)));
    }
    out(slots, 0) = std::move(y);
  }

 private:
  SimPath path_;
  Int8BatchMatMulParams p_;
  Shape output_shape_;
  QuantParams output_params_;
};

}  // namespace

std::unique_ptr<SimStep> makeConvStep(const StepContext& ctx) {
  return std::make_unique<ConvStep>(ctx);
}
std::unique_ptr<SimStep> makeLinearStep(const StepContext& ctx) {
  return std::make_unique<LinearStep>(ctx);
}
std::unique_ptr<SimStep> makeBatchMatMulStep(const StepContext& ctx) {
  return std::make_unique<BatchMatMulStep>(ctx);
}

}  // namespace npuc::quant
