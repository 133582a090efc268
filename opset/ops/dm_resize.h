// Resize (opset 13: X, roi, scales, sizes) and the deprecated Upsample (X, scales): the parsed
// parameters, the per-axis coordinate mapping, and the kernel factories. Every mapping follows
// the ONNX spec formulas, evaluated in float as ONNX Runtime does, so results agree with it.
#pragma once

#include <vector>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace dm {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class CoordMode {
  HalfPixel,
  PytorchHalfPixel,
  HalfPixelSymmetric,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};
// Simple: Upsample's rule (floor when enlarging, ceil when shrinking).
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeParams {
  ResizeMode mode = ResizeMode::Nearest;
  CoordMode coord = CoordMode::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  Shape in, out;
  std::vector<float> scales;  // per axis, out/in when sizes were given
  // Per axis, the resized length the coordinate formulas use: in * scale when scales were given
  // (not floored, as the ONNX reference computes it), else the requested size.
  std::vector<float> resized_len;
  std::vector<float> roi_start, roi_end;  // per axis; used by tf_crop_and_resize only
};

// Parses a Resize or Upsample node. `roi`, `scales`, `sizes` are the constant inputs (null if
// absent or empty). Throws ShapeError / UnsupportedOpError naming the problem.
ResizeParams resizeParams(const Node& node, const Shape& in, const Tensor* roi, const Tensor* scales,
                          const Tensor* sizes);

// The input coordinate output index `x` of `axis` maps to.
float sourceCoordinate(const ResizeParams& p, size_t axis, int64_t x);
// True if the coordinate lies outside the input and tf_crop_and_resize extrapolates there.
bool extrapolates(const ResizeParams& p, size_t axis, float coord);
// Nearest-mode rounding of a source coordinate (not yet clamped).
int64_t nearestIndex(const ResizeParams& p, size_t axis, float coord);

// One output position of a separable filter along an axis: input indices and weights
// (2 taps for linear, 4 for cubic); `extrapolate` marks tf_crop_and_resize's outside points.
struct Taps {
  int64_t index[4];
  float weight[4];
  bool extrapolate;
};
// Taps for every output index of `axis` (linear: 2 used, cubic: 4 used).
std::vector<Taps> axisTaps(const ResizeParams& p, size_t axis);
int tapCount(ResizeMode mode);

// Kernel for linear / cubic modes (float32), defined in dm_resize_interp.cpp.
std::unique_ptr<Kernel> makeInterpolatingResize(ResizeParams p);

}  // namespace dm
}  // namespace npuc
