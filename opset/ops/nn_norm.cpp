// BatchNormalization (inference), InstanceNormalization, LayerNormalization, LpNormalization.
// Plain loops over contiguous planes/rows: each is memory bound and a single pass (or two for the
// statistics), which the compiler vectorizes; oneDNN would add nothing but layout constraints.
#include <cmath>

#include "opset/ops/nn_ops.h"

namespace npuc::nn {

namespace {

// y[i] = x[i] * a + b over one contiguous run.
void affine(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// Mean and variance of one contiguous run (two passes; the second is numerically stable), with
// double accumulators so long rows keep ~1e-7 relative accuracy.
void meanVar(const float* x, int64_t n, float* mean, float* var) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double m = sum / static_cast<double>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - m;
    sq += d * d;
  }
  *mean = static_cast<float>(m);
  *var = static_cast<float>(sq / static_cast<double>(n));
}

// Checks that input `i` of a per-channel op is a [C] vector.
void requireChannelVector(InferContext& ctx, size_t i, const char* what, int64_t channels) {
  const Shape& s = ctx.inputShape(i);
  if (s != Shape{channels}) {
    throw ShapeError(ctx.node().opType() + " " + what + " " + shapeStr(s) + " must be [" +
                     std::to_string(channels) + "] (the channel dim of X " + shapeStr(ctx.inputShape(0)) +
                     ")");
  }
}

int64_t channelsOf(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 2)
    throw ShapeError(ctx.node().opType() + " input X " + shapeStr(x) + " must be N x C x ...");
  return x[1];
}

// Per-channel plane geometry of an N x C x ... tensor.
struct Planes {
  int64_t n, c, size;
  explicit Planes(const Shape& x)
      : n(x[0]), c(x[1]), size(shapeNumel(x) / std::max<int64_t>(1, x[0] * x[1])) {}
};

// ---------------------------------------------------------------- BatchNormalization

enum BnInput : size_t { kBnX = 0, kBnScale = 1, kBnBias = 2, kBnMean = 3, kBnVar = 4 };

void inferBatchNorm(InferContext& ctx) {
  if (ctx.attrs().i("training_mode", 0) != 0 || ctx.numOutputs() > 1) {
    throw UnsupportedOpError("BatchNormalization node '" + ctx.node().name() +
                             "': only the inference form (training_mode=0, one output) is supported");
  }
  const int64_t c = channelsOf(ctx);
  requireChannelVector(ctx, kBnScale, "scale", c);
  requireChannelVector(ctx, kBnBias, "B", c);
  requireChannelVector(ctx, kBnMean, "input_mean", c);
  requireChannelVector(ctx, kBnVar, "input_var", c);
  inferSameAsInput0(ctx);
}

class BatchNormKernel : public Kernel {
 public:
  BatchNormKernel(const Shape& x, float epsilon) : planes_(x), epsilon_(epsilon) {}

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[kBnX].as<float>();
    const float* scale = io.inputs[kBnScale].as<float>();
    const float* bias = io.inputs[kBnBias].as<float>();
    const float* mean = io.inputs[kBnMean].as<float>();
    const float* var = io.inputs[kBnVar].as<float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t n = 0; n < planes_.n; ++n) {
      for (int64_t c = 0; c < planes_.c; ++c) {
        const float a = scale[c] / std::sqrt(var[c] + epsilon_);
        const int64_t off = (n * planes_.c + c) * planes_.size;
        affine(x + off, y + off, planes_.size, a, bias[c] - mean[c] * a);
      }
    }
  }

 private:
  Planes planes_;
  float epsilon_;
};

std::unique_ptr<Kernel> makeBatchNorm(const KernelContext& ctx) {
  if (ctx.node.attrs().i("training_mode", 0) != 0 || ctx.node.numOutputs() > 1) {
    throw UnsupportedOpError("BatchNormalization node '" + ctx.node.name() +
                             "': only the inference form (training_mode=0, one output) is supported");
  }
  return std::make_unique<BatchNormKernel>(ctx.input_types[0].shape, ctx.node.attrs().f("epsilon", 1e-5f));
}

// ---------------------------------------------------------------- InstanceNormalization

void inferInstanceNorm(InferContext& ctx) {
  const int64_t c = channelsOf(ctx);
  requireChannelVector(ctx, 1, "scale", c);
  requireChannelVector(ctx, 2, "B", c);
  inferSameAsInput0(ctx);
}

class InstanceNormKernel : public Kernel {
 public:
  InstanceNormKernel(const Shape& x, float epsilon) : planes_(x), epsilon_(epsilon) {}

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    const float* scale = io.inputs[1].as<float>();
    const float* bias = io.inputs[2].as<float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t n = 0; n < planes_.n; ++n) {
      for (int64_t c = 0; c < planes_.c; ++c) {
        const int64_t off = (n * planes_.c + c) * planes_.size;
        float mean, var;
        meanVar(x + off, planes_.size, &mean, &var);
        const float a = scale[c] / std::sqrt(var + epsilon_);
        affine(x + off, y + off, planes_.size, a, bias[c] - mean * a);
      }
    }
  }

 private:
  Planes planes_;
  float epsilon_;
};

std::unique_ptr<Kernel> makeInstanceNorm(const KernelContext& ctx) {
  return std::make_unique<InstanceNormKernel>(ctx.input_types[0].shape, ctx.node.attrs().f("epsilon", 1e-5f));
}

// ---------------------------------------------------------------- LayerNormalization

struct LayerNormSpec {
  int64_t axis = 0;
  int64_t rows = 1, cols = 1;  // X viewed as [prod(X[:axis]), prod(X[axis:])]
  bool scalar_scale = false, scalar_bias = false;
  Shape stat_shape;  // Mean / InvStdDev: X[:axis] + ones
};

// Scale and B must broadcast to X[axis:]; npuc supports the two forms exporters produce: the full
// normalized shape (leading 1s allowed) and a single element.
bool scalarOrFull(const Shape& p, const Shape& x, int64_t axis, int64_t cols, const char* what) {
  const int64_t numel = shapeNumel(p);
  if (numel == 1) return true;
  const Shape normalized(x.begin() + axis, x.end());
  Shape trimmed = p;
  while (trimmed.size() > normalized.size() && trimmed.front() == 1) trimmed.erase(trimmed.begin());
  if (numel != cols || trimmed.size() > normalized.size() ||
      !std::equal(trimmed.rbegin(), trimmed.rend(), normalized.rbegin())) {
    throw ShapeError(std::string("LayerNormalization ") + what + " " + shapeStr(p) +
                     " must have the normalized shape " + shapeStr(normalized) + " or a single element");
  }
  return false;
}

LayerNormSpec resolveLayerNorm(const Attributes& attrs, const Shape& x, const Shape& scale,
                               const Shape* bias) {
  LayerNormSpec s;
  s.axis = normalizeAxis(attrs.i("axis", -1), static_cast<int64_t>(x.size()), "LayerNormalization axis");
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) (i < s.axis ? s.rows : s.cols) *= x[i];
  s.scalar_scale = scalarOrFull(scale, x, s.axis, s.cols, "Scale");
  s.scalar_bias = bias ? scalarOrFull(*bias, x, s.axis, s.cols, "B") : false;
  s.stat_shape = x;
  for (size_t i = static_cast<size_t>(s.axis); i < x.size(); ++i) s.stat_shape[i] = 1;
  return s;
}

void inferLayerNorm(InferContext& ctx) {
  const Shape* bias = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  const LayerNormSpec s = resolveLayerNorm(ctx.attrs(), ctx.inputShape(0), ctx.inputShape(1), bias);
  inferSameAsInput0(ctx);
  for (size_t i = 1; i < ctx.numOutputs(); ++i) {
    if (ctx.node().output(i)) ctx.setOutput(i, DType::Float32, s.stat_shape);
  }
}

class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(LayerNormSpec s, float epsilon) : s_(std::move(s)), epsilon_(epsilon) {}

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    const float* scale = io.inputs[1].as<float>();
    const float* bias = io.inputs.size() > 2 && io.inputs[2].present() ? io.inputs[2].as<float>() : nullptr;
    float* y = io.outputs[0].as<float>();
    float* mean_out = statOutput(io, 1);
    float* inv_std_out = statOutput(io, 2);
    const int64_t cols = s_.cols;
    for (int64_t r = 0; r < s_.rows; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float mean, var;
      meanVar(xr, cols, &mean, &var);
      const float inv_std = 1.f / std::sqrt(var + epsilon_);
      if (mean_out) mean_out[r] = mean;
      if (inv_std_out) inv_std_out[r] = inv_std;
      if (s_.scalar_scale) {
        // Subtract the mean first: folding it into an affine x*a - mean*a cancels two large
        // products and loses ulp(x)/std of precision on rows with a large mean and small spread.
        const float a = inv_std * scale[0];
        for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - mean) * a;
      } else {
        for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - mean) * inv_std * scale[i];
      }
      if (!bias) continue;
      if (s_.scalar_bias) {
        for (int64_t i = 0; i < cols; ++i) yr[i] += bias[0];
      } else {
        for (int64_t i = 0; i < cols; ++i) yr[i] += bias[i];
      }
    }
  }

 private:
  static float* statOutput(const KernelIO& io, size_t i) {
    return io.outputs.size() > i && io.outputs[i].present() ? io.outputs[i].as<float>() : nullptr;
  }
  LayerNormSpec s_;
  float epsilon_;
};

std::unique_ptr<Kernel> makeLayerNorm(const KernelContext& ctx) {
  const auto& in = ctx.input_types;
  const Shape* bias = in.size() > 2 && in[2].present() ? &in[2].shape : nullptr;
  return std::make_unique<LayerNormKernel>(resolveLayerNorm(ctx.node.attrs(), in[0].shape, in[1].shape, bias),
                                           ctx.node.attrs().f("epsilon", 1e-5f));
}

// ---------------------------------------------------------------- LpNormalization

struct LpSpec {
  int64_t outer = 1, axis_len = 1, inner = 1;
  int64_t p = 2;
};

LpSpec resolveLp(const Attributes& attrs, const Shape& x) {
  LpSpec s;
  const int64_t axis =
      normalizeAxis(attrs.i("axis", -1), static_cast<int64_t>(x.size()), "LpNormalization axis");
  s.p = attrs.i("p", 2);
  if (s.p != 1 && s.p != 2) throw ShapeError("LpNormalization p must be 1 or 2, got " + std::to_string(s.p));
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    (i < axis ? s.outer : i == axis ? s.axis_len : s.inner) *= x[i];
  }
  return s;
}

void inferLp(InferContext& ctx) {
  resolveLp(ctx.attrs(), ctx.inputShape(0));
  inferSameAsInput0(ctx);
}

class LpNormKernel : public Kernel {
 public:
  explicit LpNormKernel(const LpSpec& s) : s_(s) {}

  // Norms are accumulated across the axis for a whole row of `inner` positions at once, so the
  // loops run over contiguous memory; the per-position norms live in the output row meanwhile.
  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    float* y = io.outputs[0].as<float>();
    const int64_t block = s_.axis_len * s_.inner;
    for (int64_t o = 0; o < s_.outer; ++o) {
      const float* xb = x + o * block;
      float* yb = y + o * block;
      float* norm = yb;  // first row of the output block holds the norms until the final pass
      for (int64_t i = 0; i < s_.inner; ++i) norm[i] = 0.f;
      for (int64_t a = 0; a < s_.axis_len; ++a) {
        const float* xr = xb + a * s_.inner;
        if (s_.p == 1) {
          for (int64_t i = 0; i < s_.inner; ++i) norm[i] += std::fabs(xr[i]);
        } else {
          for (int64_t i = 0; i < s_.inner; ++i) norm[i] += xr[i] * xr[i];
        }
      }
      if (s_.p == 2) {
        for (int64_t i = 0; i < s_.inner; ++i) norm[i] = std::sqrt(norm[i]);
      }
      // Row 0 last: it holds the norms the other rows divide by.
      for (int64_t a = s_.axis_len - 1; a >= 0; --a) {
        const float* xr = xb + a * s_.inner;
        float* yr = yb + a * s_.inner;
        for (int64_t i = 0; i < s_.inner; ++i) yr[i] = norm[i] == 0.f ? 0.f : xr[i] / norm[i];
      }
    }
  }

 private:
  LpSpec s_;
};

std::unique_ptr<Kernel> makeLp(const KernelContext& ctx) {
  return std::make_unique<LpNormKernel>(resolveLp(ctx.node.attrs(), ctx.input_types[0].shape));
}

}  // namespace

void registerNormOps(OpRegistry& reg) {
  reg.add("BatchNormalization")
      .traits(OpTrait::LearnedParameters)
      .quantClass(QuantClass::Float)
      .inputs(5)
      .outputs(1, 3)  // training form has running mean/var outputs; refused with a clear message
      .infer(inferBatchNorm)
      .kernel(makeBatchNorm)
      .types({DType::Float32})
      .doc("inference batch norm: scale * (x - mean) / sqrt(var + epsilon) + B per channel");
  reg.add("InstanceNormalization")
      .quantClass(QuantClass::Float)
      .inputs(3)
      .infer(inferInstanceNorm)
      .kernel(makeInstanceNorm)
      .types({DType::Float32})
      .doc("per-(N, C) plane normalization with per-channel scale and bias");
  reg.add("LayerNormalization")
      .quantClass(QuantClass::Float)
      .since(17)
      .inputs(2, 3)
      .outputs(1, 3)
      .infer(inferLayerNorm)
      .kernel(makeLayerNorm)
      .types({DType::Float32})
      .doc("normalization over dims [axis, rank) with Scale and optional B; Mean/InvStdDev optional");
  reg.add("LpNormalization")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferLp)
      .kernel(makeLp)
      .types({DType::Float32})
      .doc("x / ||x||_p along axis, p in {1, 2}");
}

}  // namespace npuc::nn
