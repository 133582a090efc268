// Sliding-window geometry shared by Conv, ConvAct, ConvTranspose and the pooling ops: parses
// kernel_shape / strides / dilations / pads / auto_pad and resolves them against concrete input
// sizes, so every op agrees on output sizes and explicit begin/end pads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"

namespace npuc::nn {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// Resolved geometry for the spatial dims (all vectors have one entry per spatial dim).
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> out;  // output spatial sizes

  size_t rank() const { return kernel.size(); }
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }  // dilated kernel size
};

AutoPad parseAutoPad(const Attributes& attrs);

// Forward window (Conv, pooling). `in` are the input spatial sizes, `kernel` the kernel sizes
// (from kernel_shape or the weights). With ceil_mode the output rounds up, except that a window
// may not start in the end padding (PyTorch / ONNX Runtime convention). Throws ShapeError naming
// `op` when attributes have the wrong length or the output would be empty.
Window forwardWindow(const Attributes& attrs, const std::vector<int64_t>& in,
                     const std::vector<int64_t>& kernel, bool ceil_mode, const std::string& op);

// Transposed window (ConvTranspose): honours output_padding and output_shape. `in` are the input
// spatial sizes; the result's pads are those of the equivalent forward convolution's gradient
// (output = (in-1)*stride + extent - pads_begin - pads_end + output_padding).
struct TransposedWindow : Window {
  std::vector<int64_t> output_padding;
};
TransposedWindow transposedWindow(const Attributes& attrs, const std::vector<int64_t>& in,
                                  const std::vector<int64_t>& kernel, const std::string& op);

// Spatial dims of an N x C x spatial... shape.
inline std::vector<int64_t> spatialDims(const Shape& s) {
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

}  // namespace npuc::nn
