// DFT and STFT (opset 17). Complex values are a trailing dim of 2 (real, imaginary); a real input
// has a trailing dim of 1. Both are direct O(n^2) sums in double with a twiddle table built once
// per node: exact enough to be the reference, and the sizes these ops see in audio front ends
// (frames of 256-2048) stay cheap next to the model behind them.
//
//   DFT(x, dft_length?, axis = 1, inverse = 0, onesided = 0): along signal `axis` (not the last
//     dim), zero-padding or truncating to dft_length; inverse uses e^{+i...} and divides by n;
//     onesided keeps bins [0, n/2] (real input, forward only).
//   STFT(signal [B, L, 1|2], frame_step, window?, frame_length?, onesided = 1):
//     [B, frames, bins, 2] with frames = 1 + (L - frame_length) / frame_step, each frame multiplied
//     by the window, bins = frame_length / 2 + 1 when onesided (real input) else frame_length.
#include <cmath>

#include "opset/ops/attn_ops.h"

namespace npuc {
namespace attn {
namespace {

std::string where(const Node& n) {
  return n.opType() + " node '" + n.name() + "'";
}

void checkComplexDim(const Node& node, const Shape& x) {
  if (x.empty() || (x.back() != 1 && x.back() != 2))
    throw ShapeError(where(node) + ": the last dim must be 1 (real) or 2 (complex), got shape " +
                     shapeStr(x));
}

int64_t constScalar(const InferContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.requireConstInput(i, what);
  if (t.numel() != 1) throw ShapeError(where(ctx.node()) + ": " + what + " must be a scalar");
  return t.intAt(0);
}

// cos/sin of 2 pi m / n for m in [0, n).
std::vector<double> twiddles(int64_t n) {
  std::vector<double> t(static_cast<size_t>(2 * n));
  for (int64_t m = 0; m < n; ++m) {
    const double a = 2.0 * M_PI * static_cast<double>(m) / static_cast<double>(n);
    t[static_cast<size_t>(2 * m)] = std::cos(a);
    t[static_cast<size_t>(2 * m + 1)] = std::sin(a);
  }
  return t;
}

// One transform of `len` complex-or-real samples at `x` (stride `xs` between samples, `ch` floats
// per sample), `n` points, `bins` outputs written to `y` (stride `ys`, 2 floats per output).
// `w` optionally weights sample j.
void transform(const float* x, int64_t xs, int64_t ch, int64_t len, const float* w, int64_t n, int64_t bins,
               bool inverse, const std::vector<double>& tw, float* y, int64_t ys) {
  const int64_t used = std::min(len, n);
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < used; ++j) {
      const double g = w ? static_cast<double>(w[j]) : 1.0;
      const double a = g * x[j * xs], b = ch == 2 ? g * x[j * xs + 1] : 0.0;
      const int64_t m = (k * j) % n;
      const double c = tw[static_cast<size_t>(2 * m)], s = sign * tw[static_cast<size_t>(2 * m + 1)];
      re += a * c - b * s;
      im += a * s + b * c;
    }
    if (inverse) {
      re /= static_cast<double>(n);
      im /= static_cast<double>(n);
    }
    y[k * ys] = static_cast<float>(re);
    y[k * ys + 1] = static_cast<float>(im);
  }
}

// ---------------------------------------------------------------- DFT

struct DftGeometry {
  int64_t axis, n, bins;
};

DftGeometry dftGeometry(const Node& node, const Shape& x, const Tensor* length) {
  checkComplexDim(node, x);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attrs().i("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 1 || axis >= rank - 1)
    throw ShapeError(where(node) + ": axis " + std::to_string(node.attrs().i("axis", 1)) +
                     " must name a signal dim (not the batch or the complex dim) of shape " + shapeStr(x));
  const int64_t n = length ? length->intAt(0) : x[static_cast<size_t>(axis)];
  if (n < 1) throw ShapeError(where(node) + ": dft_length " + std::to_string(n) + " must be positive");
  const bool onesided = node.attrs().i("onesided", 0) != 0;
  if (onesided && (x.back() != 1 || node.attrs().i("inverse", 0) != 0))
    throw ShapeError(where(node) + ": onesided needs a real input and a forward transform");
  return {axis, n, onesided ? n / 2 + 1 : n};
}

void inferDft(InferContext& ctx) {
  const Tensor* length = nullptr;
  if (ctx.hasInput(1)) length = &ctx.requireConstInput(1, "DFT dft_length");
  const Shape& x = ctx.inputShape(0);
  const DftGeometry g = dftGeometry(ctx.node(), x, length);
  Shape out = x;
  out[static_cast<size_t>(g.axis)] = g.bins;
  out.back() = 2;
  ctx.setOutput(0, ctx.inputDType(0), out);
}

class DftKernel : public Kernel {
 public:
  explicit DftKernel(const KernelContext& ctx)
      : x_(ctx.input_types.at(0).shape),
        g_(dftGeometry(ctx.node, x_, ctx.input_types.size() > 1 ? ctx.constInput(1) : nullptr)),
        inverse_(ctx.node.attrs().i("inverse", 0) != 0),
        tw_(twiddles(g_.n)) {}
  void run(const KernelIO& io) const override {
    const int64_t ch = x_.back(), len = x_[static_cast<size_t>(g_.axis)];
    int64_t outer = 1, inner = 1;  // dims before the axis; signal dims after it (without channels)
    for (int64_t d = 0; d < g_.axis; ++d) outer *= x_[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(g_.axis) + 1; d + 1 < x_.size(); ++d) inner *= x_[d];
    const float* x = io.inputs[0].as<const float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        transform(x + (o * len * inner + i) * ch, inner * ch, ch, len, nullptr, g_.n, g_.bins, inverse_, tw_,
                  y + (o * g_.bins * inner + i) * 2, inner * 2);
  }

 private:
  Shape x_;
  DftGeometry g_;
  bool inverse_;
  std::vector<double> tw_;
};

// ---------------------------------------------------------------- STFT

struct StftGeometry {
  int64_t step, length, frames, bins;
};

StftGeometry stftGeometry(const Node& node, const Shape& x, int64_t step, const Shape* window,
                          const Tensor* frame_length) {
  checkComplexDim(node, x);
  if (x.size() != 3)
    throw ShapeError(where(node) + ": signal must be [batch, length, 1|2], got " + shapeStr(x));
  if (step < 1) throw ShapeError(where(node) + ": frame_step " + std::to_string(step) + " must be positive");
  int64_t length = -1;
  if (frame_length) length = frame_length->intAt(0);
  if (window) {
    if (window->size() != 1 || (length >= 0 && (*window)[0] != length))
      throw ShapeError(where(node) + ": window of shape " + shapeStr(*window) +
                       " does not match frame_length " + std::to_string(length));
    length = (*window)[0];
  }
  if (length < 1 || length > x[1])
    throw ShapeError(where(node) + ": frame length " + std::to_string(length) +
                     " does not fit signal of shape " + shapeStr(x) + " (give a window or frame_length)");
  const bool onesided = node.attrs().i("onesided", 1) != 0 && x.back() == 1;
  return {step, length, 1 + (x[1] - length) / step, onesided ? length / 2 + 1 : length};
}

void inferStft(InferContext& ctx) {
  const int64_t step = constScalar(ctx, 1, "STFT frame_step");
  const Shape* window = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  const Tensor* fl = ctx.hasInput(3) ? &ctx.requireConstInput(3, "STFT frame_length") : nullptr;
  const Shape& x = ctx.inputShape(0);
  const StftGeometry g = stftGeometry(ctx.node(), x, step, window, fl);
  ctx.setOutput(0, ctx.inputDType(0), {x[0], g.frames, g.bins, 2});
}

class StftKernel : public Kernel {
 public:
  explicit StftKernel(const KernelContext& ctx) : x_(ctx.input_types.at(0).shape) {
    const auto present = [&](size_t i) { return ctx.input_types.size() > i && ctx.input_types[i].present(); };
    has_window_ = present(2);
    const Tensor* step = ctx.constInput(1);
    if (!step) throw ShapeError(where(ctx.node) + ": frame_step must be a constant");
    g_ = stftGeometry(ctx.node, x_, step->intAt(0), has_window_ ? &ctx.input_types[2].shape : nullptr,
                      present(3) ? ctx.constInput(3) : nullptr);
    tw_ = twiddles(g_.length);
  }
  void run(const KernelIO& io) const override {
    const int64_t ch = x_.back(), len = x_[1];
    const float* x = io.inputs[0].as<const float>();
    const float* w = has_window_ ? io.inputs[2].as<const float>() : nullptr;
    float* y = io.outputs[0].as<float>();
    for (int64_t b = 0; b < x_[0]; ++b)
      for (int64_t f = 0; f < g_.frames; ++f)
        transform(x + (b * len + f * g_.step) * ch, ch, ch, g_.length, w, g_.length, g_.bins, false, tw_,
                  y + ((b * g_.frames + f) * g_.bins) * 2, 2);
  }

 private:
  Shape x_;
  bool has_window_ = false;
  StftGeometry g_{};
  std::vector<double> tw_;
};

constexpr const char* kSignalReason =
    "complex arithmetic over a trailing (real, imaginary) pair; no SoC profile has an FFT or complex "
    "multiply, and a DFT as a MatMul by a constant cosine/sine matrix would lose the spectrum's low bits "
    "in int8";

}  // namespace

void registerSignalOps(OpRegistry& reg) {
  reg.add("DFT")
      .quantClass(QuantClass::Float)
      .inputs(1, 2)
      .infer(inferDft)
      .kernel([](const KernelContext& c) { return std::make_unique<DftKernel>(c); })
      .types({DType::Float32})
      .since(17)
      .cpuOnly(kSignalReason)
      .doc(
          "discrete Fourier transform along a signal axis (attribute axis, opset 17); real or complex input");
  reg.add("STFT")
      .quantClass(QuantClass::Float)
      .inputs(2, 4)
      .infer(inferStft)
      .kernel([](const KernelContext& c) { return std::make_unique<StftKernel>(c); })
      .types({DType::Float32})
      .since(17)
      .cpuOnly(kSignalReason)
      .doc("short-time Fourier transform of [batch, length, 1|2] with optional window, onesided by default");
}

}  // namespace attn
}  // namespace npuc
