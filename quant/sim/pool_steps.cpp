// AveragePool in the integer domain: per output, the sum of (q - z_in) over the window's
// in-bounds taps, requantized once by s_in / (count * s_out). count is the number of in-bounds
// taps, or the full kernel area with count_include_pad (padding is real 0, adding nothing to
// the sum). One multiplier per possible count is prepared at compile time.
//
// MaxPool keeps its input's parameters, and dequantization is increasing, so the max of the
// int8 values is the int8 of the max: the same bytes the dequantize -> float MaxPool ->
// quantize path gives, without leaving int8 (padding is -inf, i.e. never chosen).
#include <algorithm>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/requant.h"
#include "quant/sim/phase_plane.h"
#include "quant/sim/scratch.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

namespace {

// The 2-D window of a pooling node: NCHW shapes, kernel, strides and explicit pads.
struct PoolWindow {
  Shape in_shape, out_shape;
  std::vector<int64_t> kernel, strides, pads;
  explicit PoolWindow(const Node& n)
      : in_shape(n.input(0)->shape()),
        out_shape(n.output(0)->shape()),
        kernel(n.attrs().ints("kernel_shape")),
        strides(n.attrs().ints("strides", {1, 1})),
        pads(n.attrs().ints("pads", {0, 0, 0, 0})) {}
};

class AveragePoolStep : public SimStep {
 public:
  explicit AveragePoolStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs), w_(ctx.node) {
    const Node& n = ctx.node;
    const Attributes& a = n.attrs();
    include_pad_ = a.i("count_include_pad", 0) != 0;
    const QuantParams pi = ctx.paramsOf(n.input(0));
    params_ = ctx.paramsOf(n.output(0));
    zero_point_in_ = pi.zero_point;
    const std::string what = "node '" + n.name() + "' (AveragePool)";
    for (int64_t count = 1; count <= w_.kernel[0] * w_.kernel[1]; ++count) {
      multipliers_.push_back(
          quantizeMultiplier(double{pi.scale} / (static_cast<double>(count) * params_.scale), what.c_str()));
    }
  }

  void run(SimSlots& slots) const override {
    const int8_t* x = in(slots, 0).tensor.data<int8_t>();
    SimValue y{Tensor::uninitialized(DType::Int8, w_.out_shape), true, params_};
    int8_t* d = y.tensor.data<int8_t>();
    const int64_t planes = w_.in_shape[0] * w_.in_shape[1], ih = w_.in_shape[2], iw = w_.in_shape[3];
    const int64_t oh = w_.out_shape[2], ow = w_.out_shape[3];
    for (int64_t p = 0; p < planes; ++p) {
      const int8_t* plane = x + p * ih * iw;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t acc = 0, count = 0;
          for (int64_t ky = 0; ky < w_.kernel[0]; ++ky) {
            const int64_t iy = oy * w_.strides[0] - w_.pads[0] + ky;
            if (iy < 0 || iy >= ih) continue;
            for (int64_t kx = 0; kx < w_.kernel[1]; ++kx) {
              const int64_t ix = ox * w_.strides[1] - w_.pads[1] + kx;
              if (ix < 0 || ix >= iw) continue;
              acc += int64_t{plane[iy * iw + ix]} - zero_point_in_;
              ++count;
            }
          }
          if (include_pad_) count = windowArea(oy, ox, ih, iw);
          d[(p * oh + oy) * ow + ox] =
              count == 0 ? static_cast<int8_t>(params_.zero_point)
                         : requantizeToInt8(saturateToInt32(acc),
                                            multipliers_[static_cast<size_t>(count - 1)], params_.zero_point);
        }
      }
    }
    out(slots, 0) = std::move(y);
  }

 private:
  // With count_include_pad the divisor counts padding taps but not taps beyond the padding.
  int64_t windowArea(int64_t oy, int64_t ox, int64_t ih, int64_t iw) const {
    auto extent = [](int64_t start, int64_t k, int64_t lo, int64_t hi) {
      return std::max<int64_t>(0, std::min(start + k, hi) - std::max(start, lo));
    };
    const int64_t y0 = oy * w_.strides[0] - w_.pads[0], x0 = ox * w_.strides[1] - w_.pads[1];
    return extent(y0, w_.kernel[0], -w_.pads[0], ih + w_.pads[2]) *
           extent(x0, w_.kernel[1], -w_.pads[1], iw + w_.pads[3]);
  }

  PoolWindow w_;
  bool include_pad_ = false;
  QuantParams params_;
  int32_t zero_point_in_ = 0;
  std::vector<FixedPointMultiplier> multipliers_;  // index count - 1
};

// 2-D MaxPool, explicit pads, no dilation, floor mode (supportsInt8MaxPool).
//
// Reference path: per output row, the element-wise max of the kernel_h input rows, then the max
// over each window of that row. Fast path: the input plane split by PhasePlane (padding -128, the
// int8 image of -inf, which no window's max can pick over a real element) makes every window tap
// one contiguous run over the virtual output grid, as for a depthwise conv; the max is then
// kernel_h * kernel_w contiguous byte-max passes (vectorized) and a compaction of the real
// columns. The two agree on every input (test_quant_sim_kernels.cc).
class MaxPoolStep : public SimStep {
 public:
  explicit MaxPoolStep(const StepContext& ctx)
      : SimStep(ctx.inputs, ctx.outputs), w_(ctx.node), split_(ctx.path == SimPath::Fast) {
    g_.in_h = w_.in_shape[2];
    g_.in_w = w_.in_shape[3];
    g_.out_h = w_.out_shape[2];
    g_.out_w = w_.out_shape[3];
    g_.kernel_h = w_.kernel[0];
    g_.kernel_w = w_.kernel[1];
    g_.stride_h = w_.strides[0];
    g_.stride_w = w_.strides[1];
    g_.pad_top = w_.pads[0];
    g_.pad_left = w_.pads[1];
    plane_ = PhasePlane::forConv(g_);
    taps_ = plane_.tapOffsets(g_);
  }

  void run(SimSlots& slots) const override {
    const SimValue& xv = in(slots, 0);
    SimValue y{Tensor::uninitialized(DType::Int8, w_.out_shape), true, xv.params};
    if (y.tensor.numel() > 0) {
      if (split_) {
        runSplit(xv.tensor.data<int8_t>(), y.tensor.data<int8_t>());
      } else {
        runRows(xv.tensor.data<int8_t>(), y.tensor.data<int8_t>());
      }
    }
    out(slots, 0) = std::move(y);
  }

 private:
  int64_t planes() const { return w_.in_shape[0] * w_.in_shape[1]; }

  void runRows(const int8_t* x, int8_t* d) const {
    const int64_t ih = g_.in_h, iw = g_.in_w, oh = g_.out_h, ow = g_.out_w;
    std::vector<int8_t> column_max(static_cast<size_t>(iw));
    for (int64_t p = 0; p < planes(); ++p) {
      const int8_t* plane = x + p * ih * iw;
      for (int64_t oy = 0; oy < oh; ++oy) {
        const int64_t y0 = std::max<int64_t>(oy * g_.stride_h - g_.pad_top, 0);
        const int64_t y1 = std::min<int64_t>(oy * g_.stride_h - g_.pad_top + g_.kernel_h, ih);
        int8_t* m = column_max.data();
        std::fill(m, m + iw, static_cast<int8_t>(kActivationQMin));
        for (int64_t iy = y0; iy < y1; ++iy) {
          const int8_t* row = plane + iy * iw;
          for (int64_t ix = 0; ix < iw; ++ix) m[ix] = std::max(m[ix], row[ix]);
        }
        int8_t* out = d + (p * oh + oy) * ow;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t x0 = std::max<int64_t>(ox * g_.stride_w - g_.pad_left, 0);
          const int64_t x1 = std::min<int64_t>(ox * g_.stride_w - g_.pad_left + g_.kernel_w, iw);
          // A window of padding only is max(-inf) = -inf, which quantizes to the minimum.
          int8_t v = static_cast<int8_t>(kActivationQMin);
          for (int64_t ix = x0; ix < x1; ++ix) v = std::max(v, m[ix]);
          out[ox] = v;
        }
      }
    }
  }

  void runSplit(const int8_t* x, int8_t* d) const {
    const int64_t outputs = plane_.virtualOutputs(g_);
    int8_t* plane = static_cast<int8_t*>(threadScratch(static_cast<size_t>(plane_.elements() + outputs)));
    int8_t* max = plane + plane_.elements();
    for (int64_t p = 0; p < planes(); ++p) {
      plane_.fill(g_, x + p * g_.in_h * g_.in_w, static_cast<int8_t>(kActivationQMin), plane);
      std::copy(plane + taps_[0], plane + taps_[0] + outputs, max);
      for (size_t t = 1; t < taps_.size(); ++t) {
        const int8_t* run = plane + taps_[t];
        for (int64_t i = 0; i < outputs; ++i) max[i] = std::max(max[i], run[i]);
      }
      plane_.compact(g_, max, d + p * g_.out_h * g_.out_w);
    }
  }

  PoolWindow w_;
  ConvGeometry g_;             // the window as a conv's spatial geometry (PhasePlane's input)
  PhasePlane plane_;           // the split of one input plane (fast path)
  std::vector<int64_t> taps_;  // start of each window tap's run in the split plane
  bool split_ = true;
};

}  // namespace

bool supportsInt8MaxPool(const Node& n) {
  const Attributes& a = n.attrs();
  const std::vector<int64_t> ones{1, 1};
  return n.opType() == "MaxPool" && n.numOutputs() == 1 && n.input(0)->shape().size() == 4 &&
         a.ints("kernel_shape", {}).size() == 2 && a.s("auto_pad", "NOTSET") == "NOTSET" &&
         a.i("ceil_mode", 0) == 0 && a.ints("dilations", ones) == ones;
}

std::unique_ptr<SimStep> makeMaxPoolStep(const StepContext& ctx) {
  return std::make_unique<MaxPoolStep>(ctx);
}

std::unique_ptr<SimStep> makeAveragePoolStep(const StepContext& ctx) {
  return std::make_unique<AveragePoolStep>(ctx);
}

}  // namespace npuc::quant
