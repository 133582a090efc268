// GridSample(X [N,C,H,W], grid [N,Ho,Wo,2]) -> [N,C,Ho,Wo]: samples X at the normalized (x, y)
// locations of grid ([-1, 1] spans the image: pixel centers with align_corners=1, pixel edges
// with align_corners=0). mode bilinear|linear, nearest (round half to even) or bicubic|cubic
// (A = -0.75); padding_mode zeros (0 outside), border (clamp the pixel index) or reflection
// (reflect the pixel index at the image's edges: [0, size-1] with align_corners=1, else
// [-0.5, size-0.5]). 4-D only: the N-D form of opset 20 is refused by shape inference.
#include <algorithm>
#include <cmath>

#include "opset/ops/detect_ops.h"

namespace npuc {
namespace detect {
namespace {

enum class Mode { Linear, Nearest, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct GridAttrs {
  Mode mode = Mode::Linear;
  Padding padding = Padding::Zeros;
  bool align_corners = false;
};

GridAttrs readAttrs(const Node& n) {
  GridAttrs a;
  const std::string mode = n.attrs().s("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") {
    a.mode = Mode::Linear;
  } else if (mode == "nearest") {
    a.mode = Mode::Nearest;
  } else if (mode == "bicubic" || mode == "cubic") {
    a.mode = Mode::Cubic;
  } else {
    throw ShapeError("GridSample mode '" + mode + "' is not bilinear/linear, nearest or bicubic/cubic");
  }
  const std::string pad = n.attrs().s("padding_mode", "zeros");
  if (pad == "zeros") {
    a.padding = Padding::Zeros;
  } else if (pad == "border") {
    a.padding = Padding::Border;
  } else if (pad == "reflection") {
    a.padding = Padding::Reflection;
  } else {
    throw ShapeError("GridSample padding_mode '" + pad + "' is not zeros, border or reflection");
  }
  a.align_corners = n.attrs().i("align_corners", 0) != 0;
  return a;
}

void inferGridSample(InferContext& ctx) {
  readAttrs(ctx.node());
  const Shape& x = ctx.inputShape(0);
  const Shape& g = ctx.inputShape(1);
  if (x.size() != 4) throw ShapeError("GridSample supports 4-D X [N,C,H,W] only, got " + shapeStr(x));
  if (g.size() != 4 || g[0] != x[0] || g[3] != 2) {
    throw ShapeError("GridSample grid must be [N,Ho,Wo,2] with N = " + std::to_string(x[0]) + " for X " +
                     shapeStr(x) + ", got " + shapeStr(g));
  }
  ctx.setOutput(0, ctx.inputDType(0), {x[0], x[1], g[1], g[2]});
}

float denormalize(float n, int64_t size, bool align) {
  const auto L = static_cast<float>(size);
  return align ? (n + 1.0f) / 2.0f * (L - 1.0f) : ((n + 1.0f) * L - 1.0f) / 2.0f;
}

// Reflects coordinate v into [lo, hi] (repeatedly, like a mirror pair).
float reflect(float v, float lo, float hi) {
  const float range = hi - lo;
  if (range <= 0.0f) return lo;
  if (v < lo) {
    const float d = lo - v;
    const auto n = static_cast<int64_t>(d / range);
    const float r = d - static_cast<float>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const float d = v - hi;
    const auto n = static_cast<int64_t>(d / range);
    const float r = d - static_cast<float>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return v;
}

void cubicCoeffs(float t, float c[4]) {
  constexpr float A = -0.75f;
  const float x0 = t + 1.0f, x1 = t, x2 = 1.0f - t, x3 = 2.0f - t;
  c[0] = ((A * x0 - 5.0f * A) * x0 + 8.0f * A) * x0 - 4.0f * A;
  c[1] = ((A + 2.0f) * x1 - (A + 3.0f)) * x1 * x1 + 1.0f;
  c[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
  c[3] = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
}

class GridSampleKernel : public Kernel {
 public:
  explicit GridSampleKernel(const KernelContext& ctx) : a_(readAttrs(ctx.node)) {
    const Shape& x = ctx.input_types.at(0).shape;
    const Shape& g = ctx.input_types.at(1).shape;
    if (ctx.input_types[1].dtype != DType::Float32) {
      throw UnsupportedOpError("GridSample grid must be float32, got " +
                               std::string(dtypeName(ctx.input_types[1].dtype)));
    }
    N_ = x[0];
    C_ = x[1];
    H_ = x[2];
    W_ = x[3];
    Ho_ = g[1];
    Wo_ = g[2];
  }

  void run(const KernelIO& io) const override {
    const float* X = io.inputs[0].as<const float>();
    const float* G = io.inputs[1].as<const float>();
    float* Y = io.outputs[0].as<float>();
    const int64_t outs = Ho_ * Wo_;
    for (int64_t n = 0; n < N_; ++n) {
      for (int64_t p = 0; p < outs; ++p) {
        const float* gp = G + (n * outs + p) * 2;
        const float x = denormalize(gp[0], W_, a_.align_corners),
                    y = denormalize(gp[1], H_, a_.align_corners);
        for (int64_t c = 0; c < C_; ++c) {
          Y[(n * C_ + c) * outs + p] = sample(X + (n * C_ + c) * H_ * W_, x, y);
        }
      }
    }
  }

 private:
  // The pixel at integer (r, c) under the padding mode.
  float pixel(const float* img, int64_t r, int64_t c) const {
    switch (a_.padding) {
      case Padding::Zeros: return r >= 0 && r < H_ && c >= 0 && c < W_ ? img[r * W_ + c] : 0.0f;
      case Padding::Border:
        return img[std::clamp<int64_t>(r, 0, H_ - 1) * W_ + std::clamp<int64_t>(c, 0, W_ - 1)];
      case Padding::Reflection: {
        const float lo = a_.align_corners ? 0.0f : -0.5f;
        const auto rr =
            static_cast<int64_t>(reflect(static_cast<float>(r), lo, static_cast<float>(H_ - 1) - lo));
        const auto cc =
            static_cast<int64_t>(reflect(static_cast<float>(c), lo, static_cast<float>(W_ - 1) - lo));
        return img[std::clamp<int64_t>(rr, 0, H_ - 1) * W_ + std::clamp<int64_t>(cc, 0, W_ - 1)];
      }
    }
    return 0.0f;
  }

  float sample(const float* img, float x, float y) const {
    if (a_.mode == Mode::Nearest) {
      return pixel(img, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
    }
    const float fx = std::floor(x), fy = std::floor(y);
    const auto x1 = static_cast<int64_t>(fx), y1 = static_cast<int64_t>(fy);
    if (a_.mode == Mode::Linear) {
      const float dx1 = x - fx, dx2 = 1.0f - dx1, dy1 = y - fy, dy2 = 1.0f - dy1;
      const float top = dx2 * pixel(img, y1, x1) + dx1 * pixel(img, y1, x1 + 1);
      const float bottom = dx2 * pixel(img, y1 + 1, x1) + dx1 * pixel(img, y1 + 1, x1 + 1);
      return dy2 * top + dy1 * bottom;
    }
    float cx[4], cy[4];
    cubicCoeffs(x - fx, cx);
    cubicCoeffs(y - fy, cy);
    float acc = 0.0f;
    for (int i = 0; i < 4; ++i) {
      float row = 0.0f;
      for (int j = 0; j < 4; ++j) row += cx[j] * pixel(img, y1 - 1 + i, x1 - 1 + j);
      acc += cy[i] * row;
    }
    return acc;
  }

  GridAttrs a_;
  int64_t N_ = 0, C_ = 0, H_ = 0, W_ = 0, Ho_ = 0, Wo_ = 0;
};

}  // namespace

void registerGridSampleOp(OpRegistry& reg) {
  reg.add("GridSample")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferGridSample)
      .kernel([](const KernelContext& c) { return std::make_unique<GridSampleKernel>(c); })
      .types({DType::Float32})
      .since(16)
      .cpuOnly("it gathers pixels at addresses computed from the grid data")
      .doc(
          "4-D [N,C,Ho,Wo] sampling of X at grid locations; bilinear/nearest/bicubic, padding "
          "zeros/border/reflection, align_corners");
}

}  // namespace detect
}  // namespace npuc
