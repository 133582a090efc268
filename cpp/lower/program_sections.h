// The lowering at the blob boundary: the one call each export path makes, and the check each
// load path makes. Both the float (write_blob) and quantized (QuantizedModel.export_blob) paths
// use them, so every blob for a SoC carries its program.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "blob/blob.h"
#include "lower/lowered_program.h"
#include "quant/graph/quant_plan.h"
#include "target/partition.h"

namespace npuc::lower {

// Lowers `graph` for `options->soc` (with `plan` for an INT8 build, null for FP16) and appends the
// TASK, PIPE, CPUO and NWGT sections to `options->extra_sections`. The recorded build options
// supply the placement: op_target (a Python dict repr, as the Toolkit records it; parsed by
// target/build_options.h) and single_core_mode ("True").
void appendProgramSections(const Graph& graph, const quant::QuantPlan* plan, blob::BlobWriteOptions* options);

// Whether the blob carries a lowered program (TASK, PIPE and CPUO; BlobError when only some).
bool hasProgram(const blob::LoadedBlob& loaded);

// Decodes and verifies the program of a loaded blob against its graph and against `placement`
// (every NPU / CPU task's nodes on that device); nullopt when the blob has none (written before
// the lowering existed). BlobError on a malformed or mismatching program.
std::optional<LoweredProgram> readProgram(const blob::LoadedBlob& loaded, const PartitionReport& placement);
// Same, with the placement re-derived from the blob's recorded build options
// (target/build_options.h: its SoC and op_target), as the export lowered it.
std::optional<LoweredProgram> readProgram(const blob::LoadedBlob& loaded);

}  // namespace npuc::lower
