// align_channels: pads Conv / depthwise Conv / Gemm channel counts up to the SoC's channel alignment
// with zero weights, so the NPU sees aligned tensors; see align_channels.cpp for the rules and the
// cost function. Target-specific: it runs in optimize()'s target stage (OptimizeOptions::target).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "passes/core/pass.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc {

struct AlignOptions {
  // Pad every paddable group of channels even where the cost function says it does not pay
  // (tests use it to exercise the Slice insertion).
  bool force = false;
  // Passed to partitionGraph: ops the user places on the CPU are never padded through.
  OpTargetMap op_target;
};

// Pads channels of `graph` (static shapes, float32 tensors) for `soc` computing in `dtype` (an IR
// dtype with an NPU counterpart: Int8, Int16 or Float16; ConfigError otherwise). Results are
// unchanged. Returns the number of changes: nodes whose weights or constants were padded plus
// Slices inserted (0: the graph is untouched).
size_t alignChannels(Graph& graph, const SocProfile& soc, DType dtype, const AlignOptions& options = {});

// The pass "align_channels" for one fixed SoC and dtype. The registered pass (the registry's
// factory) reads them from PassContext::target instead and runs in optimize()'s target stage.
std::unique_ptr<Pass> createAlignChannelsPass(const std::string& soc_name, DType dtype,
                                              AlignOptions options = {});

}  // namespace npuc
