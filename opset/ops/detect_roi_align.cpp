// RoiAlign(X [N,C,H,W], rois [R,4] (x1,y1,x2,y2), batch_indices [R] int64) -> [R,C,oh,ow].
//
// Each output bin averages (mode=avg) or takes the maximum of (mode=max) a grid of bilinear
// samples: sampling_ratio per side, or ceil(roi size / output size) when it is 0.
// coordinate_transformation_mode half_pixel (the opset-16 default) shifts the scaled ROI by -0.5;
// output_half_pixel (opset 10's only behaviour) does not and makes every ROI at least 1x1.
// Samples more than one pixel outside the map count as 0. max mode follows ONNX Runtime (and
// ONNX's reference): the maximum over samples of the largest of the four weighted corner terms.
#include <algorithm>
#include <cmath>
#include <limits>

#include "opset/ops/detect_ops.h"

namespace npuc {
namespace detect {
namespace {

struct RoiAlignAttrs {
  bool half_pixel = true;
  bool max_mode = false;
  int64_t out_h = 1, out_w = 1, sampling = 0;
  float scale = 1.0f;
};

RoiAlignAttrs readAttrs(const Node& n) {
  RoiAlignAttrs a;
  const std::string ctm = n.attrs().s("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    throw ShapeError("RoiAlign coordinate_transformation_mode '" + ctm +
                     "' is not half_pixel or output_half_pixel");
  }
  a.half_pixel = ctm == "half_pixel";
  const std::string mode = n.attrs().s("mode", "avg");
  if (mode != "avg" && mode != "max") throw ShapeError("RoiAlign mode '" + mode + "' is not avg or max");
  a.max_mode = mode == "max";
  a.out_h = n.attrs().i("output_height", 1);
  a.out_w = n.attrs().i("output_width", 1);
  a.sampling = n.attrs().i("sampling_ratio", 0);
  a.scale = n.attrs().f("spatial_scale", 1.0f);
  if (a.out_h < 1 || a.out_w < 1 || a.sampling < 0) {
    throw ShapeError("RoiAlign output_height/output_width must be >= 1 and sampling_ratio >= 0, got " +
                     std::to_string(a.out_h) + "/" + std::to_string(a.out_w) + "/" +
                     std::to_string(a.sampling));
  }
  return a;
}

void inferRoiAlign(InferContext& ctx) {
  const RoiAlignAttrs a = readAttrs(ctx.node());
  const Shape& x = ctx.inputShape(0);
  const Shape& rois = ctx.inputShape(1);
  const Shape& bi = ctx.inputShape(2);
  if (x.size() != 4) throw ShapeError("RoiAlign X must be 4-D [N,C,H,W], got " + shapeStr(x));
  if (rois.size() != 2 || rois[1] != 4)
    throw ShapeError("RoiAlign rois must be [num_rois, 4], got " + shapeStr(rois));
  if (bi.size() != 1 || bi[0] != rois[0]) {
    throw ShapeError("RoiAlign batch_indices must be [num_rois] = [" + std::to_string(rois[0]) + "], got " +
                     shapeStr(bi));
  }
  ctx.setOutput(0, ctx.inputDType(0), {rois[0], x[1], a.out_h, a.out_w});
}

// One bilinear sample: four flat offsets into a channel plane and their weights.
struct Sample {
  int64_t o[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

Sample sampleAt(float y, float x, int64_t H, int64_t W) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(H) || x < -1.0f || x > static_cast<float>(W)) return s;  // all zero
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  auto yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x), yh = yl + 1, xh = xl + 1;
  if (yl >= H - 1) {
    yh = yl = H - 1;
    y = static_cast<float>(yl);
  }
  if (xl >= W - 1) {
    xh = xl = W - 1;
    x = static_cast<float>(xl);
  }
  const float ly = y - static_cast<float>(yl), lx = x - static_cast<float>(xl), hy = 1.0f - ly,
              hx = 1.0f - lx;
  s.o[0] = yl * W + xl;
  s.o[1] = yl * W + xh;
  s.o[2] = yh * W + xl;
  s.o[3] = yh * W + xh;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

class RoiAlignKernel : public Kernel {
 public:
  explicit RoiAlignKernel(const KernelContext& ctx) : a_(readAttrs(ctx.node)) {
    const Shape& x = ctx.input_types.at(0).shape;
    N_ = x[0];
    C_ = x[1];
    H_ = x[2];
    W_ = x[3];
    R_ = ctx.input_types.at(1).shape[0];
    if (ctx.input_types.at(1).dtype != DType::Float32) {
      throw UnsupportedOpError("RoiAlign rois must be float32, got " +
                               std::string(dtypeName(ctx.input_types[1].dtype)));
    }
  }
  void run(const KernelIO& io) const override {
    const float* X = io.inputs[0].as<const float>();
    const float* rois = io.inputs[1].as<const float>();
    const TensorView& biv = io.inputs[2];
    float* Y = io.outputs[0].as<float>();
    const float offset = a_.half_pixel ? 0.5f : 0.0f;
    const int64_t plane = H_ * W_, bins = a_.out_h * a_.out_w;
    for (int64_t r = 0; r < R_; ++r) {
      const int64_t b = biv.dtype == DType::Int32 ? biv.as<const int32_t>()[r] : biv.as<const int64_t>()[r];
      if (b < 0 || b >= N_) {
        throw InputError("RoiAlign batch_indices[" + std::to_string(r) + "] = " + std::to_string(b) +
                         " is out of range for X with " + std::to_string(N_) + " image(s)");
      }
      const float* roi = rois + r * 4;
      const float x0 = roi[0] * a_.scale - offset, y0 = roi[1] * a_.scale - offset;
      float rw = roi[2] * a_.scale - offset - x0, rh = roi[3] * a_.scale - offset - y0;
      if (!a_.half_pixel) {
        rw = std::max(rw, 1.0f);
        rh = std::max(rh, 1.0f);
      }
      const float bh = rh / static_cast<float>(a_.out_h), bw = rw / static_cast<float>(a_.out_w);
      const int64_t gh =
          a_.sampling > 0 ? a_.sampling : static_cast<int64_t>(std::ceil(rh / static_cast<float>(a_.out_h)));
      const int64_t gw =
          a_.sampling > 0 ? a_.sampling : static_cast<int64_t>(std::ceil(rw / static_cast<float>(a_.out_w)));
      const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
      for (int64_t c = 0; c < C_; ++c) {
        const float* img = X + (b * C_ + c) * plane;
        float* out = Y + (r * C_ + c) * bins;
        for (int64_t ph = 0; ph < a_.out_h; ++ph) {
          for (int64_t pw = 0; pw < a_.out_w; ++pw) {
            float acc = a_.max_mode ? std::numeric_limits<float>::lowest() : 0.0f;
            for (int64_t iy = 0; iy < gh; ++iy) {
              const float y = y0 + static_cast<float>(ph) * bh +
                              (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
              for (int64_t ix = 0; ix < gw; ++ix) {
                const float x = x0 + static_cast<float>(pw) * bw +
                                (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
                const Sample s = sampleAt(y, x, H_, W_);
                if (a_.max_mode) {
                  for (int k = 0; k < 4; ++k) acc = std::max(acc, s.w[k] * img[s.o[k]]);
                } else {
                  acc += s.w[0] * img[s.o[0]] + s.w[1] * img[s.o[1]] + s.w[2] * img[s.o[2]] +
                         s.w[3] * img[s.o[3]];
                }
              }
            }
            out[ph * a_.out_w + pw] = a_.max_mode ? acc : acc / count;
          }
        }
      }
    }
  }

 private:
  RoiAlignAttrs a_;
  int64_t N_ = 0, C_ = 0, H_ = 0, W_ = 0, R_ = 0;
};

}  // namespace

void registerRoiAlignOp(OpRegistry& reg) {
  reg.add("RoiAlign")
      .quantClass(QuantClass::Float)
      .inputs(3)
      .infer(inferRoiAlign)
      .kernel([](const KernelContext& c) { return std::make_unique<RoiAlignKernel>(c); })
      .types({DType::Float32})
      .since(16)
      .cpuOnly("bilinear gathers at addresses computed from the ROI data")
      .doc(
          "[R,C,oh,ow] avg/max of bilinear samples per bin of each ROI; coordinate_transformation_mode "
          "half_pixel or output_half_pixel; sampling_ratio 0 (adaptive) or > 0");
}

}  // namespace detect
}  // namespace npuc
