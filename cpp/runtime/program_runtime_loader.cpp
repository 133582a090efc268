#include "runtime/program_runtime_loader.h"

#include "blob/blob_format.h"
#include "common/error.h"
#include "lower/program_sections.h"
#include "memory/memory_plan_codec.h"
#include "target/build_options.h"

namespace npuc::runtime {

std::shared_ptr<const ProgramRuntime> programRuntimeForBlob(
    const blob::LoadedBlob& loaded, std::shared_ptr<const quant::QuantizedExecutor> sim,
    std::string* why_not) {
  const blob::ExtraSection* plan_section = nullptr;
  for (const blob::ExtraSection& s : loaded.extra_sections)
    if (s.kind == blob::kSectionMemoryPlan) plan_section = &s;
  if (!lower::hasProgram(loaded) || !plan_section) {
    *why_not = "the blob has no lowered program (TASK) or no memory plan (MPLN)";
    return nullptr;
  }
  // The partition the export lowered and planned with: the SoC's, moved by the recorded op_target.
  const SocProfile& soc = socProfile(loaded.meta.soc);
  const PartitionReport placement = placementOfRecordedBuild(*loaded.graph, soc, loaded.meta.options);
  std::optional<lower::LoweredProgram> program = lower::readProgram(loaded, placement);
  memory::NpuMemoryPlan plan = memory::decodeMemoryPlan(plan_section->bytes);
  const quant::QuantPlan* quant_plan = sim->mode() == quant::SimMode::Int8 ? &sim->plan() : nullptr;
  const std::string mismatch = memory::findPlanMismatch(plan, *loaded.graph, quant_plan, soc, placement);
  if (!mismatch.empty())
    throw BlobError("memory plan (MPLN) is not the plan of the blob's partition: " + mismatch);
  why_not->clear();
  return std::make_shared<const ProgramRuntime>(std::move(sim), std::move(*program), std::move(plan));
}

}  // namespace npuc::runtime
