// Which runtime a loaded blob gets: the program runtime (runtime/program_runtime.h) when the blob
// carries its lowered program (TASK/PIPE/CPUO/NWGT) and memory plan (MPLN) for the same partition,
// else none (the caller keeps the plain simulator, as for blobs written before the lowering).
#pragma once

#include <memory>
#include <string>

#include "blob/blob.h"
#include "runtime/program_runtime.h"

namespace npuc::runtime {

// The program runtime of `loaded` on `sim` (the simulator of loaded.graph), or null with the
// reason in `why_not`: no program or no memory plan in the blob, or a build with op_target (the
// stored plan is for the SoC's default partition, the program for the overridden one). Errors of
// a malformed program or plan propagate (BlobError).
std::shared_ptr<const ProgramRuntime> programRuntimeForBlob(
    const blob::LoadedBlob& loaded, std::shared_ptr<const quant::QuantizedExecutor> sim,
    std::string* why_not);

}  // namespace npuc::runtime
