#include "compile/compiled_model_io.h"

#include <fmt/format.h>

#include <unordered_set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/options_codec.h"
#include "compile/packed_constants.h"
#include "compile/shape_variants.h"
#include "lower/lower.h"
#include "lower/program_codec.h"
#include "memory/memory_plan_codec.h"
#include "quant/graph/quant_plan_codec.h"
#include "sched/core_scheduler.h"

namespace npuc {

namespace {

blob::BlobWriteOptions writeOptions(const CompiledModel& m) {
  blob::BlobWriteOptions opts;
  opts.soc = m.soc->name;
  opts.options = encodeCompileOptions(m.options);
  checkRecordedOptionLimits(opts.options);  // ConfigError naming the option, before any byte is written
  if (m.quant_plan)
    opts.extra_sections.push_back({blob::kSectionQuant, true, quant::encodeQuantPlan(*m.quant_plan)});
  if (m.program) {
    // Weights an NPU task packs are stored once, as its NWGT entry; the program sections that
    // locate them become required (a reader without them could not rebuild the graph).
    opts.packed_constants = packedOnlyConstants(*m.graph, *m.program, m.quantPlan());
    for (blob::ExtraSection& s : lower::programExtraSections(*m.program, !opts.packed_constants.empty()))
      opts.extra_sections.push_back(std::move(s));
  }
  if (m.memory_plan)  // optional: a reader without it plans afresh
    opts.extra_sections.push_back(
        {blob::kSectionMemoryPlan, false, memory::encodeMemoryPlan(*m.memory_plan)});
  if (!m.core_schedules.empty())  // optional: a reader without it schedules afresh
    opts.extra_sections.push_back(
        {sched::kSectionCoreSchedules, false, sched::encodeCoreSchedules(m.core_schedules)});
  addShapeVariantsSection(m, opts);  // last: it references the sections above
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

// QUNT against the graph it quantizes: every entry names a value or node the graph has, and a
// per-channel entry has one scale per channel of its axis. The simulator relies on all of it.
void checkQuantPlan(const quant::QuantPlan& plan, const Graph& graph, const std::string& origin) {
  for (const auto& [name, q] : plan.tensors) {
    const Value* v = graph.findValue(name);
    if (!v)
      throw BlobError("blob '" + origin + "': QUNT section quantizes value '" + name +
                      "', which its graph lacks");
    if (q.axis >= 0) {
      const Shape& shape = v->shape();
      if (!v->hasShape() || q.axis >= static_cast<int64_t>(shape.size()) ||
          shape[static_cast<size_t>(q.axis)] != static_cast<int64_t>(q.scales.size()))
        throw BlobError(fmt::format(
            "blob '{}': QUNT section gives value '{}' {} scales along axis {}, which do not "
            "match its shape {}",
            origin, name, q.scales.size(), q.axis, v->hasShape() ? shapeStr(shape) : "(unknown)"));
    }
  }
  std::unordered_set<std::string> nodes;
  for (const Node* n : graph.nodes()) nodes.insert(n->name());
  for (const auto& [name, precision] : plan.nodes)
    if (!nodes.count(name))
      throw BlobError("blob '" + origin + "': QUNT section gives node '" + name +
                      "' a precision, but its graph has no such node");
}

// CSCH against the program and the SoC: one schedule per core count 1 .. n (n at most the SoC's,
// 1 for a single_core_mode build), each placing every program task on cores the SoC has.
void checkCoreSchedules(CompiledModel& m, const blob::ExtraSection& section, const std::string& origin) {
  if (!m.program)
    throw BlobError("blob '" + origin + "': CSCH section schedules a program, but the blob has none (TASK)");
  std::vector<sched::CoreSchedule> schedules = sched::decodeCoreSchedules(section.bytes);
  std::vector<bool> on_npu;
  for (const lower::Task& t : m.program->tasks) on_npu.push_back(t.kind == lower::TaskKind::Npu);
  const auto soc_cores = static_cast<uint32_t>(m.soc->npu.cores);
  const uint32_t allowed = m.options.single_core_mode ? 1u : soc_cores;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const sched::CoreSchedule& s = schedules[i];
    if (s.cores != i + 1 || s.cores > allowed)
      throw BlobError(
          fmt::format("blob '{}': CSCH section's schedule {} is for {} cores; expected {} ({} has {} "
                      "NPU cores{})",
                      origin, i, s.cores, i + 1, m.soc->name, soc_cores,
                      m.options.single_core_mode ? ", the build is single_core_mode: 1" : ""));
    try {
      sched::checkSchedule(s, on_npu, soc_cores);
    } catch (const InputError& e) {
      throw BlobError("blob '" + origin + "': CSCH section: " + e.what());
    }
  }
  m.core_schedules = std::move(schedules);
}

}  // namespace

std::string serializeCompiledModel(const CompiledModel& m) {
  return blob::writeBlobBytes(*m.graph, writeOptions(m));
}

void writeCompiledModel(const CompiledModel& m, const std::string& path) {
  blob::writeBlob(*m.graph, path, writeOptions(m));
}

// Everything past the container's own checks (structure, checksum, version, SoC).
static CompiledModel fromLoadedBlob(blob::LoadedBlob b, const std::string& origin,
                                    std::shared_ptr<const CustomOpSet> custom_ops) {
  b.graph->custom_ops = std::move(custom_ops);
  CompiledModel m;
  m.soc = &socProfile(b.meta.soc);
  m.options = decodeCompileOptions(b.meta.options, origin);
  const blob::ExtraSection* plan_section = nullptr;
  const blob::ExtraSection* schedule_section = nullptr;
  for (const blob::ExtraSection& s : b.extra_sections) {
    if (s.kind == blob::kSectionQuant) {
      m.quant_plan = quant::decodeQuantPlan(s.bytes);
      checkQuantPlan(*m.quant_plan, *b.graph, origin);
    }
    if (s.kind == blob::kSectionMemoryPlan) plan_section = &s;
    if (s.kind == sched::kSectionCoreSchedules) schedule_section = &s;
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
  // The NpuPacked constants' float32 tensors, from NWGT (and QUNT's scales for INT8 tasks).
  restorePackedConstants(*b.graph, b.packed_constants, m.program ? &*m.program : nullptr, m.quantPlan(),
                         origin);
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
  if (schedule_section) checkCoreSchedules(m, *schedule_section, origin);
  BlobOrigin o;
  o.path = origin;
  o.format_major = b.meta.format_major;
  o.format_minor = b.meta.format_minor;
  o.producer = b.meta.producer;
  o.recorded_options = b.meta.options;
  o.model_digest = b.meta.model_digest;
  for (const blob::ExtraSection& s : b.extra_sections) o.extra_sections.push_back(s.kind);
  for (const blob::SectionEntry& s : b.sections) o.sections.push_back({s.kind, s.required, s.offset, s.size});
  o.file_bytes = b.file_bytes;
  auto size_of = [&](uint32_t kind) { return b.section_bytes.count(kind) ? b.section_bytes.at(kind) : 0; };
  o.weight_section_bytes = size_of(blob::kSectionWeights);
  o.packed_weight_section_bytes = size_of(lower::kSectionNpuWeights);
  m.origin = std::move(o);
  m.graph = std::shared_ptr<const Graph>(std::move(b.graph));
  m.shape_variants = loadShapeVariants(b, m, origin, m.graph->custom_ops);  // config(dynamic_input)
  return m;
}

// The section decoders (QUNT, TASK/PIPE/CPUO, MPLN) report "corrupt blob: <section> at offset N:
// ..." without knowing the file; every refusal names it.
static CompiledModel fromLoadedBlobNamed(blob::LoadedBlob b, const std::string& origin,
                                         std::shared_ptr<const CustomOpSet> custom_ops) {
  try {
    return fromLoadedBlob(std::move(b), origin, std::move(custom_ops));
  } catch (const BlobError& e) {
    const std::string msg = e.what();
    if (msg.find("'" + origin + "'") != std::string::npos) throw;
    throw BlobError("cannot load blob '" + origin + "': " + msg);
  }
}

CompiledModel readCompiledModel(const std::string& bytes, const std::optional<std::string>& expected_soc,
                                const std::string& origin, std::shared_ptr<const CustomOpSet> custom_ops) {
  return fromLoadedBlobNamed(blob::readBlobBytes(bytes, expected_soc, origin), origin, std::move(custom_ops));
}

CompiledModel loadCompiledModel(const std::string& path, const std::optional<std::string>& expected_soc,
                                std::shared_ptr<const CustomOpSet> custom_ops) {
  return fromLoadedBlobNamed(blob::loadBlob(path, expected_soc), path, std::move(custom_ops));
}

}  // namespace npuc
