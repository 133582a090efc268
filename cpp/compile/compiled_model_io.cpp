#include "compile/compiled_model_io.h"

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/options_codec.h"
#include "lower/lower.h"
#include "lower/program_codec.h"
#include "memory/memory_plan_codec.h"
#include "quant/graph/quant_plan_codec.h"

namespace npuc {

namespace {

blob::BlobWriteOptions writeOptions(const CompiledModel& m) {
  blob::BlobWriteOptions opts;
  opts.soc = m.soc->name;
  opts.options = encodeCompileOptions(m.options);
  if (m.quant_plan)
    opts.extra_sections.push_back({blob::kSectionQuant, true, quant::encodeQuantPlan(*m.quant_plan)});
  if (m.program)
    for (blob::ExtraSection& s : lower::programExtraSections(*m.program))
      opts.extra_sections.push_back(std::move(s));
  if (m.memory_plan)  // optional: a reader without it plans afresh
    opts.extra_sections.push_back(
        {blob::kSectionMemoryPlan, false, memory::encodeMemoryPlan(*m.memory_plan)});
  return opts;
}

// The placement the recorded options give. A recorded op_target this graph cannot honour means
// the file is inconsistent: a BlobError, not the user's ConfigError.
PartitionReport recordedPlacement(const Graph& graph, const SocProfile& soc, const OpTargetMap& op_target,
                                  const std::string& origin) {
  try {
    return partitionGraph(graph, soc, op_target);
  } catch (const ConfigError& e) {
    throw BlobError("blob '" + origin + "': its recorded op_target does not apply to its graph: " + e.what());
  }
}

}  // namespace

std::string serializeCompiledModel(const CompiledModel& m) {
  return blob::writeBlobBytes(*m.graph, writeOptions(m));
}

void writeCompiledModel(const CompiledModel& m, const std::string& path) {
  blob::writeBlob(*m.graph, path, writeOptions(m));
}

// Everything past the container's own checks (structure, checksum, version, SoC).
static CompiledModel fromLoadedBlob(blob::LoadedBlob b, const std::string& origin) {
  CompiledModel m;
  m.soc = &socProfile(b.meta.soc);
  m.options = decodeCompileOptions(b.meta.options, origin);
  const blob::ExtraSection* plan_section = nullptr;
  for (const blob::ExtraSection& s : b.extra_sections) {
    if (s.kind == blob::kSectionQuant) m.quant_plan = quant::decodeQuantPlan(s.bytes);
    if (s.kind == blob::kSectionMemoryPlan) plan_section = &s;
  }
  if (b.meta.options.count("quantized") && m.options.quantized != m.quant_plan.has_value())
    throw BlobError("blob '" + origin + "': recorded quantized=" + (m.options.quantized ? "True" : "False") +
                    " but the blob " + (m.quant_plan ? "has" : "has no") + " quantization section (QUNT)");
  m.options.quantized = m.quant_plan.has_value();
  m.placement = recordedPlacement(*b.graph, *m.soc, m.options.op_target, origin);
  lower::ProgramSections sections;
  if (lower::findProgramSections(b.extra_sections, &sections)) {
    m.program = lower::decodeProgram(sections);
    lower::verifyProgram(*m.program, *b.graph);
    lower::verifyProgramPlacement(*m.program, *b.graph, m.placement);
  }
  if (plan_section) {
    memory::NpuMemoryPlan plan = memory::decodeMemoryPlan(plan_section->bytes);
    for (const memory::PlannedBuffer& buf : plan.buffers)
      if (!b.graph->findValue(buf.value))
        throw BlobError("blob '" + origin + "': MPLN section plans value '" + buf.value +
                        "', which its graph lacks");
    const std::string mismatch = memory::findPlanMismatch(plan, *b.graph, m.quantPlan(), *m.soc, m.placement);
    if (!mismatch.empty())
      throw BlobError("blob '" + origin +
                      "': MPLN section is not the plan of its build's partition: " + mismatch);
    m.memory_plan = std::move(plan);
  }
  BlobOrigin o;
  o.path = origin;
  o.format_major = b.meta.format_major;
  o.format_minor = b.meta.format_minor;
  o.producer = b.meta.producer;
  o.recorded_options = b.meta.options;
  o.model_digest = b.meta.model_digest;
  for (const blob::ExtraSection& s : b.extra_sections) o.extra_sections.push_back(s.kind);
  o.file_bytes = b.file_bytes;
  auto size_of = [&](uint32_t kind) { return b.section_bytes.count(kind) ? b.section_bytes.at(kind) : 0; };
  o.weight_section_bytes = size_of(blob::kSectionWeights);
  o.packed_weight_section_bytes = size_of(lower::kSectionNpuWeights);
  m.origin = std::move(o);
  m.graph = std::shared_ptr<const Graph>(std::move(b.graph));
  return m;
}

CompiledModel readCompiledModel(const std::string& bytes, const std::optional<std::string>& expected_soc,
                                const std::string& origin) {
  return fromLoadedBlob(blob::readBlobBytes(bytes, expected_soc, origin), origin);
}

CompiledModel loadCompiledModel(const std::string& path, const std::optional<std::string>& expected_soc) {
  return fromLoadedBlob(blob::loadBlob(path, expected_soc), path);
}

}  // namespace npuc
