// In-place Concat ("concat elimination", as TVM, Arm's Vela and the TFLite GPU delegates do): when
// every input of a channel Concat can be written by its producer straight into its slice of the
// Concat's output buffer, the Concat copies nothing and its inputs occupy sub-ranges of that
// buffer. The memory plan then plans one buffer that contains the others (npu_memory_plan.h:
// PlannedBuffer::within), the program runtime lets the producers write into the slices and skips
// the Concat, and eval_perf costs it as free. The compile driver decides it once per compiled
// model (compile/compiled_model.cpp); the blob's memory plan carries it (MPLN version 3).
//
// Why a slice is contiguous: an NPU activation is stored NC1HWC2 (channels in blocks of C2, the
// SoC's "other" alignment for the dtype). With batch 1, the channels [c, c + k) of a [1, C, ...]
// tensor are the bytes [c * inner, (c + k) * inner) * element size (inner = the product of the
// dims after C) when c is a multiple of C2, in NC1HWC2 and in plain NCHW alike; so every input but
// the last must have a multiple of C2 channels (the last one's padding is the output's).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::memory {

// Why `concat` cannot be planned in place, "" when it can. Conditions: a Concat placed on the NPU
// along dim 1 of a batch-1 tensor whose output is an activation (not a graph output); every input
// a distinct activation written by an NPU node other than a Concat (no nesting), neither a graph
// input nor a graph output; one storage dtype for all, computed by the NPU (an INT8 build's Concat
// runs in INT8, every input quantized per tensor); every slice starting on a C2 block and on
// `alignment` bytes. An input whose scale or zero point differs from the output's
// (rescaledInputs) is rescaled by the Concat step within its slice, element by element, so no
// reader may see it after the Concat: the memory plan, which knows the steps, also requires its
// last reader to be the Concat.
// When it can and `offsets` is given, it receives each input's byte offset in the output's buffer.
std::string concatInPlaceProblem(const Node& concat, const quant::QuantPlan* quant_plan,
                                 const SocProfile& soc, const PartitionReport& placement, uint64_t alignment,
                                 std::vector<uint64_t>* offsets = nullptr);

// Per input of `concat`: true when the Concat requantizes it (its quantization differs from the
// output's); all false in a float build.
std::vector<bool> rescaledInputs(const Node& concat, const quant::QuantPlan* quant_plan);
// No input is rescaled: planned in place, the Concat step is a no-op.
bool concatCopiesNothing(const Node& concat, const quant::QuantPlan* quant_plan);

// Whether `node` is a Concat a memory plan planned in place (`containers`:
// NpuMemoryPlan::containers()). When it also copies nothing, its inputs are already its output, so
// the program runtime skips its step and eval_perf costs it as free (one rule for both, read from
// the plan); otherwise it runs, rescaling the slices that need it.
bool concatIsInPlace(const Node& node, const std::set<std::string>& containers);

}  // namespace npuc::memory
