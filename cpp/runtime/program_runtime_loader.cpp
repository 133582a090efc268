#include "runtime/program_runtime_loader.h"

namespace npuc::runtime {

std::shared_ptr<const ProgramRuntime> programRuntimeFor(const CompiledModel& model,
                                                        std::shared_ptr<const quant::QuantizedExecutor> sim,
                                                        std::string* why_not) {
  if (!model.program || !model.memory_plan) {
    *why_not = "the blob has no lowered program (TASK) or no memory plan (MPLN)";
    return nullptr;
  }
  why_not->clear();
  return std::make_shared<const ProgramRuntime>(std::move(sim), *model.program, *model.memory_plan);
}

}  // namespace npuc::runtime
