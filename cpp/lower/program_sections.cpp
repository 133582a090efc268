#include "lower/program_sections.h"

#include "common/error.h"
#include "lower/lower.h"
#include "lower/program_codec.h"
#include "target/build_options.h"
#include "target/soc_profile.h"

namespace npuc::lower {

void appendProgramSections(const Graph& graph, const quant::QuantPlan* plan,
                           blob::BlobWriteOptions* options) {
  LowerOptions lo;
  lo.op_target = opTargetOfBuild(options->options);
  lo.plan = plan;
  auto it = options->options.find("single_core_mode");
  lo.single_core_mode = it != options->options.end() && it->second == "True";
  const LoweredProgram program = lowerGraph(graph, socProfile(options->soc), lo);
  for (blob::ExtraSection& s : programExtraSections(program)) options->extra_sections.push_back(std::move(s));
}

std::optional<LoweredProgram> readProgram(const blob::LoadedBlob& loaded, const PartitionReport& placement) {
  ProgramSections sections;
  if (!findProgramSections(loaded.extra_sections, &sections)) return std::nullopt;
  LoweredProgram program = decodeProgram(sections);
  verifyProgram(program, *loaded.graph);
  verifyProgramPlacement(program, *loaded.graph, placement);
  return program;
}

bool hasProgram(const blob::LoadedBlob& loaded) {
  ProgramSections sections;
  return findProgramSections(loaded.extra_sections, &sections);
}

std::optional<LoweredProgram> readProgram(const blob::LoadedBlob& loaded) {
  if (!hasProgram(loaded)) return std::nullopt;  // no partition to derive for a blob without one
  return readProgram(
      loaded, placementOfRecordedBuild(*loaded.graph, socProfile(loaded.meta.soc), loaded.meta.options));
}

}  // namespace npuc::lower
