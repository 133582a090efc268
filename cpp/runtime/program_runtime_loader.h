// Which runtime a loaded blob gets: the program runtime (runtime/program_runtime.h) when the blob
// carries its lowered program (TASK/PIPE/CPUO/NWGT) and memory plan (MPLN), else none (the caller
// keeps the plain simulator, as for blobs written before the lowering). Both are checked against
// the partition re-derived from the blob's SoC and recorded build options (op_target included),
// the one the export lowered and planned with.
#pragma once

#include <memory>
#include <string>

#include "blob/blob.h"
#include "runtime/program_runtime.h"

namespace npuc::runtime {

// The program runtime of `loaded` on `sim` (the simulator of loaded.graph), or null with the
// reason in `why_not`: no program or no memory plan in the blob. BlobError for a malformed program
// or plan, or one that does not match the build's partition (a node on the wrong device, a plan
// for another partition).
std::shared_ptr<const ProgramRuntime> programRuntimeForBlob(
    const blob::LoadedBlob& loaded, std::shared_ptr<const quant::QuantizedExecutor> sim,
    std::string* why_not);

}  // namespace npuc::runtime
