// Resize / Upsample: parameter parsing, coordinate mapping, shape inference, the nearest-mode
// kernel (any dtype, an index-map gather) and registration. Linear and cubic kernels live in
// dm_resize_interp.cpp.
#include "opset/ops/dm_resize.h"

#include <algorithm>
#include <cmath>

namespace npuc {
namespace dm {

namespace {

ResizeMode parseMode(const std::string& m) {
  if (m == "nearest") return ResizeMode::Nearest;
  if (m == "linear" || m == "bilinear") return ResizeMode::Linear;  // "bilinear": old Upsample spelling
  if (m == "cubic") return ResizeMode::Cubic;
  throw UnsupportedOpError("resize mode '" + m + "' is not supported (nearest, linear, cubic)");
}

CoordMode parseCoordMode(const std::string& m) {
  if (m == "half_pixel") return CoordMode::HalfPixel;
  if (m == "pytorch_half_pixel") return CoordMode::PytorchHalfPixel;
  if (m == "half_pixel_symmetric") return CoordMode::HalfPixelSymmetric;  // opset 19
  if (m == "align_corners") return CoordMode::AlignCorners;
  if (m == "asymmetric") return CoordMode::Asymmetric;
  if (m == "tf_half_pixel_for_nn") return CoordMode::TfHalfPixelForNn;
  if (m == "tf_crop_and_resize") return CoordMode::TfCropAndResize;
  throw UnsupportedOpError("coordinate_transformation_mode '" + m + "' is not supported");
}

NearestMode parseNearestMode(const std::string& m) {
  if (m == "round_prefer_floor") return NearestMode::RoundPreferFloor;
  if (m == "round_prefer_ceil") return NearestMode::RoundPreferCeil;
  if (m == "floor") return NearestMode::Floor;
  if (m == "ceil") return NearestMode::Ceil;
  throw UnsupportedOpError("nearest_mode '" + m + "' is not supported");
}

// A float parameter tensor's values; an empty tensor counts as absent.
std::vector<float> floatValues(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.doubleAt(i));
  return v;
}

bool nonEmpty(const Tensor* t) {
  return t && t->numel() > 0;
}

// Expands per-listed-axis values (opset-18 `axes`) to one value per dim, `fill` elsewhere.
template <typename T>
std::vector<T> perAxis(const std::vector<T>& vals, const std::vector<int64_t>& axes, size_t rank, T fill,
                       const char* what) {
  if (vals.size() != axes.size()) {
    throw ShapeError(std::string(what) + " has " + std::to_string(vals.size()) + " entries for " +
                     std::to_string(axes.size()) + " axes");
  }
  std::vector<T> out(rank, fill);
  for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axes[i])] = vals[i];
  return out;
}

}  // namespace

ResizeParams resizeParams(const Node& node, const Shape& in, const Tensor* roi, const Tensor* scales,
                          const Tensor* sizes) {
  const Attributes& a = node.attrs();
  const bool upsample = node.opType() == "Upsample";
  ResizeParams p;
  p.in = in;
  p.mode = parseMode(a.s("mode", "nearest"));
  if (upsample) {
    p.coord = CoordMode::Asymmetric;  // Upsample (opset <= 9) semantics, as ONNX Runtime runs it
    p.nearest = NearestMode::Simple;
  } else {
    p.coord = parseCoordMode(a.s("coordinate_transformation_mode", "half_pixel"));
    p.nearest = parseNearestMode(a.s("nearest_mode", "round_prefer_floor"));
    p.cubic_a = a.f("cubic_coeff_a", -0.75f);
    p.exclude_outside = a.i("exclude_outside", 0) != 0;
    p.extrapolation = a.f("extrapolation_value", 0.0f);
    if (a.i("antialias", 0) != 0) throw UnsupportedOpError("Resize antialias=1 is not supported");
    if (a.s("keep_aspect_ratio_policy", "stretch") != "stretch") {
      throw UnsupportedOpError("Resize keep_aspect_ratio_policy other than 'stretch' is not supported");
    }
  }
  const size_t rank = in.size();
  std::vector<int64_t> axes;
  if (a.has("axes")) {
    axes = normalizedAxes(a.ints("axes"), static_cast<int64_t>(rank), "Resize axis");
  } else {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }

  if (nonEmpty(sizes)) {
    p.out = perAxis(intValues(*sizes, "Resize sizes"), axes, rank, int64_t{-1}, "Resize sizes");
    p.scales.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (p.out[d] < 0) p.out[d] = in[d];
      p.scales[d] = in[d] ? static_cast<float>(p.out[d]) / static_cast<float>(in[d]) : 1.0f;
      p.resized_len.push_back(static_cast<float>(p.out[d]));
    }
  } else if (nonEmpty(scales)) {
    p.scales = perAxis(floatValues(*scales), axes, rank, 1.0f, "Resize scales");
    p.out.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (!(p.scales[d] > 0.0f)) {
        throw ShapeError("Resize scales must be positive, got " + std::to_string(p.scales[d]) + " on axis " +
                         std::to_string(d));
      }
      // floor(in * scale) in float, as ONNX Runtime computes it.
      p.resized_len.push_back(static_cast<float>(in[d]) * p.scales[d]);
      p.out[d] = static_cast<int64_t>(p.resized_len.back());
    }
  } else {
    throw ShapeError("Resize needs a non-empty scales or sizes input");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (in[d] == 0 && p.out[d] > 0)
      throw ShapeError("Resize cannot enlarge the empty axis " + std::to_string(d));
  }

  p.roi_start.assign(rank, 0.0f);
  p.roi_end.assign(rank, 1.0f);
  if (p.coord == CoordMode::TfCropAndResize && nonEmpty(roi)) {
    const std::vector<float> r = floatValues(*roi);
    if (r.size() != 2 * axes.size()) {
      throw ShapeError("Resize roi has " + std::to_string(r.size()) + " entries, expected 2 x " +
                       std::to_string(axes.size()));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi_start[static_cast<size_t>(axes[i])] = r[i];
      p.roi_end[static_cast<size_t>(axes[i])] = r[i + axes.size()];
    }
  }
  return p;
}

float sourceCoordinate(const ResizeParams& p, size_t axis, int64_t x_out) {
  const float x = static_cast<float>(x_out);
  const float scale = p.scales[axis];
  const float len_in = static_cast<float>(p.in[axis]);
  const float len_out = p.resized_len[axis];
  switch (p.coord) {
    case CoordMode::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case CoordMode::PytorchHalfPixel: return len_out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordMode::HalfPixelSymmetric: {
      // half_pixel, shifted so the truncated output stays centred on the input.
      const float adjustment = len_out > 0 ? static_cast<float>(p.out[axis]) / len_out : 1.0f;
      return len_in / 2 * (1 - adjustment) + (x + 0.5f) / scale - 0.5f;
    }
    case CoordMode::AlignCorners: return len_out == 1 ? 0.0f : x * (len_in - 1) / (len_out - 1);
    case CoordMode::Asymmetric: return x / scale;
    case CoordMode::TfHalfPixelForNn: return (x + 0.5f) / scale;
    case CoordMode::TfCropAndResize: {
      const float s = p.roi_start[axis];
      const float e = p.roi_end[axis];
      return len_out > 1 ? s * (len_in - 1) + (x * (e - s) * (len_in - 1)) / (len_out - 1)
                         : 0.5f * (s + e) * (len_in - 1);
    }
  }
  return x;
}

bool extrapolates(const ResizeParams& p, size_t axis, float c) {
  return p.coord == CoordMode::TfCropAndResize && (c < 0.0f || c > static_cast<float>(p.in[axis] - 1));
}

int64_t nearestIndex(const ResizeParams& p, size_t axis, float c) {
  switch (p.nearest) {
    case NearestMode::RoundPreferFloor:
      // A tie (x.5) goes down; everything else rounds to nearest.
      if (c == static_cast<float>(static_cast<int64_t>(c)) + 0.5f) return static_cast<int64_t>(std::floor(c));
      return static_cast<int64_t>(std::round(c));
    case NearestMode::RoundPreferCeil: return static_cast<int64_t>(std::round(c));
    case NearestMode::Floor: return static_cast<int64_t>(std::floor(c));
    case NearestMode::Ceil: return static_cast<int64_t>(std::ceil(c));
    case NearestMode::Simple:
      return p.scales[axis] < 1.0f ? static_cast<int64_t>(std::ceil(c)) : static_cast<int64_t>(c);
  }
  return 0;
}

int tapCount(ResizeMode mode) {
  return mode == ResizeMode::Cubic ? 4 : 2;
}

namespace {

// Keys' cubic convolution weights for the 4 neighbours at offsets -1, 0, 1, 2 of a point at
// fraction `s` past its floor, with coefficient A (-0.75 like PyTorch, -0.5 like TensorFlow).
void cubicWeights(float s, float A, float w[4]) {
  w[0] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
  w[1] = ((A + 2) * s - (A + 3)) * s * s + 1;
  w[2] = ((A + 2) * (1 - s) - (A + 3)) * (1 - s) * (1 - s) + 1;
  w[3] = ((A * (2 - s) - 5 * A) * (2 - s) + 8 * A) * (2 - s) - 4 * A;
}

}  // namespace

std::vector<Taps> axisTaps(const ResizeParams& p, size_t axis) {
  const int64_t len = p.in[axis];
  std::vector<Taps> taps(static_cast<size_t>(p.out[axis]));
  for (int64_t x = 0; x < p.out[axis]; ++x) {
    Taps& t = taps[static_cast<size_t>(x)];
    const float c = sourceCoordinate(p, axis, x);
    t.extrapolate = extrapolates(p, axis, c);
    if (p.mode == ResizeMode::Linear) {
      // Outside the input the nearest edge value is used (the spec's edge padding).
      const float xc = std::clamp(c, 0.0f, static_cast<float>(len - 1));
      const int64_t i0 = static_cast<int64_t>(xc);
      const int64_t i1 = std::min(i0 + 1, len - 1);
      const float frac = xc - static_cast<float>(i0);
      t.index[0] = i0;
      t.index[1] = i1;
      t.weight[0] = i0 == i1 ? 1.0f : 1.0f - frac;
      t.weight[1] = i0 == i1 ? 0.0f : frac;
      t.index[2] = t.index[3] = i0;
      t.weight[2] = t.weight[3] = 0.0f;
      continue;
    }
    const float fl = std::floor(c);
    const int64_t i0 = static_cast<int64_t>(fl);
    cubicWeights(c - fl, p.cubic_a, t.weight);
    float sum = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = i0 - 1 + k;
      if (p.exclude_outside && (i < 0 || i >= len)) t.weight[k] = 0.0f;
      sum += t.weight[k];
      t.index[k] = std::clamp<int64_t>(i, 0, len - 1);
    }
    if (p.exclude_outside && sum != 0.0f) {
      for (float& w : t.weight) w /= sum;  // the remaining taps are renormalized to sum to 1
    }
  }
  return taps;
}

namespace {

// ---------------------------------------------------------------- inference

ResizeParams paramsFromInfer(const InferContext& ctx) {
  const bool upsample = ctx.node().opType() == "Upsample";
  auto constant = [&](size_t i, const char* what) -> const Tensor* {
    if (!ctx.hasInput(i)) return nullptr;
    return &ctx.requireConstInput(i, what);
  };
  if (upsample)
    return resizeParams(ctx.node(), ctx.inputShape(0), nullptr, constant(1, "Upsample scales"), nullptr);
  const Tensor* sizes = constant(3, "Resize sizes");
  // With sizes given, scales (and roi outside tf_crop_and_resize) do not matter and may be
  // non-constant placeholders.
  const Tensor* scales = nonEmpty(sizes) ? ctx.constInput(2) : constant(2, "Resize scales");
  // roi matters only to tf_crop_and_resize; elsewhere it may be anything, even non-constant.
  const bool crop = ctx.attrs().s("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  const Tensor* roi = crop ? constant(1, "Resize roi") : ctx.constInput(1);
  return resizeParams(ctx.node(), ctx.inputShape(0), roi, scales, sizes);
}

void inferResize(InferContext& ctx) {
  const ResizeParams p = paramsFromInfer(ctx);
  if (p.mode != ResizeMode::Nearest && ctx.inputDType(0) != DType::Float32) {
    throw UnsupportedOpError(std::string("Resize linear/cubic supports float32 input, got ") +
                             dtypeName(ctx.inputDType(0)));
  }
  ctx.setOutput(0, ctx.inputDType(0), p.out);
}

// ---------------------------------------------------------------- nearest kernel

class NearestResizeKernel : public Kernel {
 public:
  NearestResizeKernel(const ResizeParams& p, DType dtype)
      : fill_(Tensor::scalar<float>(p.extrapolation).castTo(dtype)) {
    std::vector<std::vector<int64_t>> maps(p.in.size());
    for (size_t d = 0; d < p.in.size(); ++d) {
      for (int64_t x = 0; x < p.out[d]; ++x) {
        const float c = sourceCoordinate(p, d, x);
        maps[d].push_back(extrapolates(p, d, c) ? -1
                                                : std::clamp<int64_t>(nearestIndex(p, d, c), 0, p.in[d] - 1));
      }
    }
    gather_ = IndexMapGather(p.in, maps, dtypeSize(dtype));
  }
  void run(const KernelIO& io) const override {
    gather_.run(io.inputs[0].data, io.outputs[0].data, fill_.raw());
  }

 private:
  Tensor fill_;  // extrapolation_value in the tensor's dtype
  IndexMapGather gather_;
};

std::unique_ptr<Kernel> makeResize(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  ResizeParams p;
  if (ctx.node.opType() == "Upsample") {
    p = resizeParams(ctx.node, in.shape, nullptr, ctx.constInput(1), nullptr);
  } else {
    p = resizeParams(ctx.node, in.shape, ctx.constInput(1), ctx.constInput(2), ctx.constInput(3));
  }
  if (p.out != ctx.output_types[0].shape) {
    throw ShapeError("Resize output " + shapeStr(ctx.output_types[0].shape) + " differs from the computed " +
                     shapeStr(p.out));
  }
  if (p.mode == ResizeMode::Nearest) return std::make_unique<NearestResizeKernel>(p, in.dtype);
  if (in.dtype != DType::Float32) {
    throw UnsupportedOpError(std::string("Resize linear/cubic supports float32 input, got ") +
                             dtypeName(in.dtype));
  }
  return makeInterpolatingResize(std::move(p));
}

}  // namespace
}  // namespace dm

void registerDmResizeOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Resize")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::SharedScale)
      .inputs(1, 4)
      .infer(dm::namedInfer(dm::inferResize))
      .kernel(dm::namedKernel(dm::makeResize))
      .types(any)
      .doc("nearest (any dtype) / linear / cubic (float32) resampling, every coordinate transformation mode");
  reg.add("Upsample")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(dm::namedInfer(dm::inferResize))
      .kernel(dm::namedKernel(dm::makeResize))
      .types(any)
      .doc("deprecated (opset <= 9) form of Resize: asymmetric coordinates, nearest or linear");
}

}  // namespace npuc
