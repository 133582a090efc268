#include "target/op_geometry.h"

#include <algorithm>

#include "common/error.h"

namespace npuc {

namespace {

const Shape& staticShape(const Node& node, size_t input) {
  const Value* v = node.input(input);
  if (!v || !v->shapeIsStatic())
    throw ShapeError(node.opType() + " '" + node.name() + "': input " + std::to_string(input) +
                     " has no static shape");
  return v->shape();
}

// Total padding SAME_* auto_pad adds along one dim so that out = ceil(in / stride).
int64_t samePadTotal(int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  int64_t out = (in + stride - 1) / stride;
  int64_t effective_kernel = (kernel - 1) * dilation + 1;
  return std::max<int64_t>((out - 1) * stride + effective_kernel - in, 0);
}

}  // namespace

WindowGeometry windowGeometry(const Node& node) {
  const Attributes& a = node.attrs();
  const Shape& x = staticShape(node, 0);
  if (x.size() < 3)
    throw ShapeError(node.opType() + " '" + node.name() + "': input rank " + std::to_string(x.size()) +
                     " has no spatial dims");
  WindowGeometry g;
  g.in_channels = x[1];
  bool has_weight = node.opType() == "Conv" || node.opType() == "ConvTranspose";
  if (a.has("kernel_shape")) {
    g.kernel = a.ints("kernel_shape");
  } else if (has_weight) {
    const Shape& w = staticShape(node, 1);
    g.kernel.assign(w.begin() + 2, w.end());
  } else {
    throw ShapeError(node.opType() + " '" + node.name() + "': kernel_shape is missing");
  }
  size_t k = g.kernel.size();
  g.strides = a.ints("strides", std::vector<int64_t>(k, 1));
  g.dilations = a.ints("dilations", std::vector<int64_t>(k, 1));
  g.pads = a.ints("pads", std::vector<int64_t>(2 * k, 0));
  g.group = a.i("group", 1);
  std::string auto_pad = a.s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    g.pads.assign(2 * k, 0);
  } else if ((auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") && node.opType() != "ConvTranspose" &&
             x.size() == k + 2) {
    for (size_t d = 0; d < k; ++d) {
      int64_t total = samePadTotal(x[d + 2], g.kernel[d], g.strides[d], g.dilations[d]);
      int64_t small = total / 2, large = total - small;
      g.pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      g.pads[d + k] = auto_pad == "SAME_UPPER" ? large : small;
    }
  }
  if (g.strides.size() != k || g.dilations.size() != k || g.pads.size() != 2 * k)
    throw ShapeError(node.opType() + " '" + node.name() +
                     "': strides/dilations/pads do not match kernel rank " + std::to_string(k));
  return g;
}

bool isDepthwiseConv(const Node& node) {
  if (node.opType() != "Conv") return false;
  int64_t group = node.attrs().i("group", 1);
  const Value* x = node.input(0);
  return group > 1 && x && x->rank() >= 2 && x->shape()[1] == group;
}

int64_t gemmReductionLength(const Node& node) {
  const Shape& a = staticShape(node, 0);
  if (node.opType() == "Gemm") {
    if (a.size() != 2) throw ShapeError("Gemm '" + node.name() + "': A must be 2-D, got " + shapeStr(a));
    return node.attrs().i("transA", 0) ? a[0] : a[1];
  }
  return a.empty() ? 1 : a.back();  // MatMul; a 1-D A is [K]
}

}  // namespace npuc
