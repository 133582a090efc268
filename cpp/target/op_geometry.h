// Shape facts about NN nodes that the target model needs (kernel/stride/pad of conv-like ops,
// GEMM reduction length, MAC counts), read from attributes and static shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "opset/macs.h"  // nodeMacs

namespace npuc {

// Window geometry of Conv, ConvTranspose, MaxPool and AveragePool with ONNX defaults applied
// (strides/dilations 1, pads 0; auto_pad SAME_* resolved from the input shape).
struct WindowGeometry {
  std::vector<int64_t> kernel;  // one entry per spatial dim
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // ONNX order: all begins, then all ends
  int64_t group = 1;
  int64_t in_channels = 0;
  size_t spatialRank() const { return kernel.size(); }
};

// Throws ShapeError naming the node when shapes or attributes needed are missing.
WindowGeometry windowGeometry(const Node& node);

// True for a Conv whose group equals its input channel count (> 1): one filter per channel.
bool isDepthwiseConv(const Node& node);

// The reduction length K of a MatMul ([..., M, K] x [..., K, N]) or Gemm (honouring transA).
int64_t gemmReductionLength(const Node& node);


}  // namespace npuc
