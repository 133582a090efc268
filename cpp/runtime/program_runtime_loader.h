// Which runtime a loaded model gets: the program runtime (runtime/program_runtime.h) when the
// compiled model carries its lowered program and memory plan (both already checked against its
// placement when the blob was read, compile/compiled_model_io.h), else none: the caller keeps the
// plain simulator, as for blobs written before the lowering.
#pragma once

#include <memory>
#include <string>

#include "compile/compiled_model.h"
#include "runtime/program_runtime.h"

namespace npuc::runtime {

// The program runtime of `model` on `sim` (the simulator of model.graph), or null with the reason
// in `why_not`.
std::shared_ptr<const ProgramRuntime> programRuntimeFor(const CompiledModel& model,
                                                        std::shared_ptr<const quant::QuantizedExecutor> sim,
                                                        std::string* why_not);

}  // namespace npuc::runtime
