// FP32 host kernels for Conv and ConvAct on oneDNN.
#pragma once

#include <memory>

#include "opset/ops/nn_activation.h"
#include "opset/ops/nn_window.h"
#include "opset/registry.h"

namespace npuc::nn {

// Everything a convolution kernel needs, resolved from one node with known shapes.
struct ConvSpec {
  Shape x;  // N x C x spatial...
  Shape w;  // M x C/group x kernel...
  Shape y;  // N x M x out...
  int64_t group = 1;
  Window window;
  bool has_bias = false;
  bool has_sum = false;  // ConvAct's 4th input, added before the activation
  Activation act;
  // ConvAct's x_layout / y_layout (runtime/host_layout.h): X, or Y and Sum, stored channels-last.
  bool x_nhwc = false;
  bool y_nhwc = false;
};

// Input positions shared by Conv and ConvAct.
enum ConvInput : size_t { kConvX = 0, kConvW = 1, kConvB = 2, kConvSum = 3 };

// Validates X/W/B(/Sum) shapes and attributes; throws ShapeError naming the mismatch.
ConvSpec resolveConv(const Attributes& attrs, const Shape& x, const Shape& w, const Shape* bias,
                     const Shape* sum, const std::string& op);

// Picks the fastest implementation for the spec (see nn_conv_kernel.cpp for the measurements).
// Weights that are not constant are reordered on every run.
std::unique_ptr<Kernel> makeConvKernel(const ConvSpec& spec, const KernelContext& ctx);

// Depthwise 2-D convs (group == C == M) run on NCHW by a stencil kernel (nn_conv_depthwise.cpp).
bool isPlainDepthwise2d(const ConvSpec& spec);
std::unique_ptr<Kernel> makeDepthwiseConvKernel(const ConvSpec& spec);

}  // namespace npuc::nn
