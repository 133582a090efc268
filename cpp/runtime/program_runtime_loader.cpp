#include "runtime/program_runtime_loader.h"

#include "blob/blob_format.h"
#include "lower/program_sections.h"
#include "memory/memory_plan_codec.h"

namespace npuc::runtime {

std::shared_ptr<const ProgramRuntime> programRuntimeForBlob(
    const blob::LoadedBlob& loaded, std::shared_ptr<const quant::QuantizedExecutor> sim,
    std::string* why_not) {
  const blob::ExtraSection* plan_section = nullptr;
  for (const blob::ExtraSection& s : loaded.extra_sections)
    if (s.kind == blob::kSectionMemoryPlan) plan_section = &s;
  auto target = loaded.meta.options.find("op_target");
  if (target != loaded.meta.options.end() && !lower::opTargetFromOption(target->second).empty()) {
    *why_not = "built with op_target: the stored memory plan is for the default partition";
    return nullptr;
  }
  std::optional<lower::LoweredProgram> program = lower::readProgram(loaded);
  if (!program || !plan_section) {
    *why_not = "the blob has no lowered program (TASK) or no memory plan (MPLN)";
    return nullptr;
  }
  memory::NpuMemoryPlan plan = memory::decodeMemoryPlan(plan_section->bytes);
  why_not->clear();
  return std::make_shared<const ProgramRuntime>(std::move(sim), std::move(*program), std::move(plan));
}

}  // namespace npuc::runtime
