// ConvTranspose whose kernel windows do not overlap (stride == kernel, no padding, no dilation,
// group 1, 2-D), as in U-Net / DB-head upsamplers: every input pixel writes its own kh x kw
// output patch, so Y is one matrix product T = W^T (M*kh*kw x C) * X (C x H*W) on the plain
// NCHW buffers, followed by a pass that interleaves T's rows into the output and adds the bias.
//
// oneDNN 2.6's deconvolution (jit:avx512_core) runs these shapes 5-10x slower than the product:
// it pads M to its 16-channel block (the DB head's last layer has M = 1) and applies the bias in
// a separate scalar pass (measured on ppocrv4_det: 24->24 at 120x120 5.7 ms, 14.7 ms with bias;
// 24->1 at 240x240 8.0 ms, 20.6 ms with bias).
#pragma once

#include <memory>

#include "opset/ops/nn_window.h"
#include "opset/registry.h"

namespace npuc::nn {

// True when the patch kernel computes this ConvTranspose (x, w: ONNX shapes; y: the output's).
bool isPatchConvTranspose(const Shape& x, const Shape& w, int64_t group, const TransposedWindow& win,
                          const Shape& y);

// The patch kernel; constant weights are transposed once, others on every run.
std::unique_ptr<Kernel> makePatchConvTransposeKernel(const Shape& x, const Shape& w, bool has_bias,
                                                     const KernelContext& ctx);

}  // namespace npuc::nn
