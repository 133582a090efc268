#include "compile/compiled_reports.h"

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model_io.h"
#include "lower/lowered_program.h"

namespace npuc {

namespace {

// The 16-bit float format a Float16 task computes in on this SoC (a profile without FP16 computes
// float ops in int16, as the lowering does).
NpuDType floatTaskDType(const SocProfile& soc) {
  for (NpuDType t : {NpuDType::Float16, NpuDType::Int16})
    if (soc.supportsDtype(t)) return t;
  return NpuDType::Float16;
}

}  // namespace

NpuDType compiledDType(const CompiledModel& m) {
  if (!m.quant_plan) return floatTaskDType(*m.soc);
  // The plan's scheme decides the integer type: int16 activations for w8a16, w16a16i, w4a16.
  return m.quant_plan->scheme.activation_bits == 16 ? NpuDType::Int16 : NpuDType::Int8;
}

namespace {

std::vector<perf::CostedTask> programTasks(const CompiledModel& m) {
  const std::vector<Node*> nodes = m.graph->nodeList();
  std::vector<perf::CostedTask> out;
  for (const lower::Task& t : m.program->tasks) {
    if (t.kind == lower::TaskKind::Convert) continue;  // costed as the hand-over of its reader
    perf::CostedTask c;
    for (uint32_t i : t.nodes) c.task.nodes.push_back(nodes.at(i));
    c.task.fused = t.nodes.size() > 1;
    c.task.device = t.kind == lower::TaskKind::Npu ? Device::Npu : Device::Cpu;
    c.task.op_type = t.pattern;
    for (uint32_t i : t.nodes)  // the placement lists nodes in graph order, as the program indexes them
      c.task.full_name += (c.task.full_name.empty() ? "" : "+") + m.placement.nodes.at(i).label;
    c.dtype = t.compute == lower::ElemType::Int8    ? NpuDType::Int8
              : t.compute == lower::ElemType::Int16 ? NpuDType::Int16
                                                    : floatTaskDType(*m.soc);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

perf::PerfReport compiledPerf(const CompiledModel& m, perf::TilingCache* cache) {
  perf::PerfOptions options;
  options.op_target = m.options.op_target;
  options.single_core_mode = m.options.single_core_mode;
  options.dtype = compiledDType(m);
  if (m.quant_plan) options.scheme = m.quant_plan->scheme;
  if (!m.program) return perf::evaluatePerf(*m.graph, *m.soc, options, cache);
  return perf::evaluateTasks(*m.graph, *m.soc, m.placement, programTasks(m), options, cache);
}

memory::MemoryReport compiledMemory(const CompiledModel& m) {
  uint64_t file = 0, weights = 0, packed = 0;
  if (m.origin) {
    file = m.origin->file_bytes;
    weights = m.origin->weight_section_bytes;
    packed = m.origin->packed_weight_section_bytes;
  } else {  // what export would write
    const std::string bytes = serializeCompiledModel(m);
    file = bytes.size();
    const std::map<uint32_t, uint64_t> sizes = blob::sectionSizes(bytes);
    auto size_of = [&](uint32_t kind) { return sizes.count(kind) ? sizes.at(kind) : 0; };
    weights = size_of(blob::kSectionWeights);
    packed = size_of(lower::kSectionNpuWeights);
  }
  memory::NpuMemoryPlan plan =
      m.memory_plan ? *m.memory_plan : memory::planNpuMemory(*m.graph, m.quantPlan(), *m.soc, m.placement);
  memory::MemoryReport r = memory::memoryReport(*m.graph, m.quantPlan(), *m.soc, m.placement, std::move(plan),
                                                file, weights, packed);
  r.plan_from_blob = m.origin.has_value() && m.memory_plan.has_value();
  return r;
}

}  // namespace npuc
