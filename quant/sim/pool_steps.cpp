// AveragePool in the integer domain: per output, the sum of (q - z_in) over the window's
// in-bounds taps, requantized once by s_in / (count * s_out). count is the number of in-bounds
// taps, or the full kernel area with count_include_pad (padding is real 0, adding nothing to
// the sum). One multiplier per possible count is prepared at compile time.
#include <algorithm>

#include "common/error.h"
#include "quant/int_limits.h"
#include "quant/requant.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

namespace {

class AveragePoolStep : public SimStep {
 public:
  explicit AveragePoolStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    const Attributes& a = n.attrs();
    in_shape_ = n.input(0)->shape();
    out_shape_ = n.output(0)->shape();
    kernel_ = a.ints("kernel_shape");
    strides_ = a.ints("strides", {1, 1});
    pads_ = a.ints("pads", {0, 0, 0, 0});
    include_pad_ = a.i("count_include_pad", 0) != 0;
    const QuantParams pi = ctx.paramsOf(n.input(0));
    params_ = ctx.paramsOf(n.output(0));
    zero_point_in_ = pi.zero_point;
    const std::string what = "node '" + n.name() + "' (AveragePool)";
    for (int64_t count = 1; count <= kernel_[0] * kernel_[1]; ++count) {
      multipliers_.push_back(
          quantizeMultiplier(double{pi.scale} / (static_cast<double>(count) * params_.scale), what.c_str()));
    }
  }

  void run(SimSlots& slots) const override {
    const int8_t* x = in(slots, 0).tensor.data<int8_t>();
    SimValue y{Tensor(DType::Int8, out_shape_), true, params_};
    int8_t* d = y.tensor.data<int8_t>();
    const int64_t planes = in_shape_[0] * in_shape_[1], ih = in_shape_[2], iw = in_shape_[3];
    const int64_t oh = out_shape_[2], ow = out_shape_[3];
    for (int64_t p = 0; p < planes; ++p) {
      const int8_t* plane = x + p * ih * iw;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t acc = 0, count = 0;
          for (int64_t ky = 0; ky < kernel_[0]; ++ky) {
            const int64_t iy = oy * strides_[0] - pads_[0] + ky;
            if (iy < 0 || iy >= ih) continue;
            for (int64_t kx = 0; kx < kernel_[1]; ++kx) {
              const int64_t ix = ox * strides_[1] - pads_[1] + kx;
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
    const int64_t y0 = oy * strides_[0] - pads_[0], x0 = ox * strides_[1] - pads_[1];
    return extent(y0, kernel_[0], -pads_[0], ih + pads_[2]) *
           extent(x0, kernel_[1], -pads_[1], iw + pads_[3]);
  }

  Shape in_shape_, out_shape_;
  std::vector<int64_t> kernel_, strides_, pads_;
  bool include_pad_ = false;
  QuantParams params_;
  int32_t zero_point_in_ = 0;
  std::vector<FixedPointMultiplier> multipliers_;  // index count - 1
};

}  // namespace

std::unique_ptr<SimStep> makeAveragePoolStep(const StepContext& ctx) {
  return std::make_unique<AveragePoolStep>(ctx);
}

}  // namespace npuc::quant
