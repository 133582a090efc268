// Weights stored once (blob format 2.0). A float32 constant that only one NPU task reads, as the
// weight its first node packs into NWGT, is written as that NWGT entry alone (an NpuPacked GRAPH
// record, no WGHT bytes): int8 for an INT8 task, IEEE half for an FP16 one. On load the float32
// tensor is rebuilt from the entry: int8 x the plan's per-channel scale (quant::dequantizeValue),
// or half -> float. The simulator only ever reads such a weight through quantizeNodeWeights (INT8
// nodes) or rounded to half (FP16 nodes), so a constant is stored packed only when the writer has
// checked that the rebuilt tensor gives it the very same int8 values / half bits as the original:
// outputs of a loaded blob are bit-identical to the in-memory build's. What changes is the float
// tensor itself: after load_blob the graph's FP32 weights are the dequantized ones (what
// accuracy_analysis and export_onnx of a loaded blob then see).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "ir/graph.h"
#include "lower/lowered_program.h"
#include "quant/graph/quant_plan.h"

namespace npuc {

// Writer: the constants of `graph` that can be stored as their task's NWGT entry only, by name.
// `plan` is the INT8 build's quantization plan, null for a float build.
std::map<std::string, blob::PackedConstant> packedOnlyConstants(const Graph& graph,
                                                                const lower::LoweredProgram& program,
                                                                const quant::QuantPlan* plan);

// Reader: fills the zero-filled placeholders of the NpuPacked constants `packed` (blob::LoadedBlob)
// in place with the float32 tensors rebuilt from `program`'s NWGT. BlobError naming the constant and `origin`
// when no NPU task packs it at that extent as its first node's weight, when the view or element type does not
// fit, or when an INT8 entry has no scales in `plan`.
void restorePackedConstants(Graph& graph, const std::vector<blob::PackedConstant>& packed,
                            const lower::LoweredProgram* program, const quant::QuantPlan* plan,
                            const std::string& origin);

}  // namespace npuc
