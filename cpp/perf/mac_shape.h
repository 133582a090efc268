// The geometry the cost model needs of a MAC-bound op (Conv, Gemm, MatMul), in one form: a 2-D
// convolution over [batch, in_c, in_h, in_w]. A 1-D conv has in_h = 1; Gemm and MatMul are 1x1
// convs whose "pixels" are the M rows (in_h = 1, in_w = M) with K input and N output channels.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace npuc::perf {

struct MacOpShape {
  std::string op_type;
  int64_t batch = 1;
  int64_t in_c = 0, out_c = 0, group = 1;
  int64_t in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, dilation_h = 1;  // only the row direction matters for row-band tiling
  bool depthwise = false;
  bool has_bias = false;

  int64_t usefulMacs() const { return batch * out_h * out_w * out_c * kernel_h * kernel_w * (in_c / group); }
  // Input rows a band of `out_rows` output rows reads (the halo included), capped by in_h.
  int64_t inputRows(int64_t out_rows) const;
  // The fields that decide cost, serialized: the tiling cache's key material.
  std::string signature() const;
};

// Useful MACs of any node: Conv/Gemm/MatMul via macOpShape(), ConvTranspose (every input pixel
// scatters its kernel into Cout/group channels), LSTM/GRU/RNN (opset/macs.h), 0 for the rest.
int64_t usefulMacs(const Node& node);

// True for the ops macOpShape() understands (OpTrait::MacGeometry: Conv, Gemm, MatMul).
bool isMacOp(const Node& node);
// Throws ShapeError naming the node when a shape is not static or the rank is unsupported.
MacOpShape macOpShape(const Node& node);

}  // namespace npuc::perf
