// Which [N, C, H, W] view of a MAC node's constant weight the NPU packs (NC1HWC2, see
// weight_packing.h): one rule for the lowering, which packs it, and for the blob loader, which
// rebuilds the float weight from the packed bytes (compile/packed_constants.h).
#pragma once

#include <optional>

#include "ir/graph.h"
#include "lower/weight_packing.h"

namespace npuc::lower {

struct NpuWeightView {
  Nchw dims{};              // the packed logical view
  bool depthwise = false;   // a depthwise Conv: lanes run along its channels (depthwise alignment)
  bool transposed = false;  // a [K, N] Gemm / MatMul weight, packed as [N, K, 1, 1]
};

// Conv [O, I/g, kh, kw] as it is; depthwise [C, 1, kh, kw] as [1, C, kh, kw]; a 2-D Gemm / MatMul
// weight as [N, K, 1, 1], transposed from [K, N] unless Gemm's transB already stores [N, K].
// nullopt when the node has no packable weight (another op, or input 1 is not a float32 constant
// of rank 4 for Conv, 2 for Gemm / MatMul).
std::optional<NpuWeightView> npuWeightView(const Node& anchor);

}  // namespace npuc::lower
