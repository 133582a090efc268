#include "compile/compiled_reports.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model_io.h"
#include "lower/lowered_program.h"
#include "memory/concat_in_place.h"
#include "sched/arena_hazards.h"

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
  const std::set<std::string> containers =
      m.memory_plan ? m.memory_plan->containers() : std::set<std::string>{};
  std::vector<perf::CostedTask> out;
  for (const lower::Task& t : m.program->tasks) {
    if (t.kind == lower::TaskKind::Convert) continue;  // costed as the hand-over of its reader
    perf::CostedTask c;
    for (uint32_t i : t.nodes) c.task.nodes.push_back(nodes.at(i));
    c.task.fused = t.nodes.size() > 1;
    c.task.device = t.kind == lower::TaskKind::Npu ? Device::Npu : Device::Cpu;
    c.task.op_type = t.pattern;
    c.in_place = t.kind == lower::TaskKind::Npu && t.nodes.size() == 1 &&
                 memory::concatIsInPlace(*nodes.at(t.nodes[0]), containers) &&
                 memory::concatCopiesNothing(*nodes.at(t.nodes[0]), m.quantPlan());
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

namespace {

perf::PerfOptions perfOptions(const CompiledModel& m) {
  perf::PerfOptions options;
  options.op_target = m.options.op_target;
  options.single_core_mode = m.options.single_core_mode;
  options.dtype = compiledDType(m);
  if (m.quant_plan) options.scheme = m.quant_plan->scheme;
  return options;
}

// The program costed on one core, and what the core scheduler needs of each program task: the
// costed rows' work (every task but the Converts, which are host steps costed as their readers'
// hand-overs), with what each task reads taken from the program's tensors, and the earlier tasks
// whose arena bytes its outputs reuse (sched/arena_hazards.h: it may not start before they end).
struct ProgramWork {
  perf::PerfReport report;
  std::vector<sched::TaskWork> work;  // per program task
  std::vector<uint32_t> task_of_row;
};

ProgramWork programWork(const CompiledModel& m, perf::TilingCache* cache) {
  perf::PerfOptions options = perfOptions(m);
  options.single_core_mode = true;
  std::vector<sched::TaskWork> rows_work;
  ProgramWork p;
  p.report = perf::evaluateTasks(*m.graph, *m.soc, m.placement, programTasks(m), options, cache, &rows_work);
  const std::vector<lower::Task>& tasks = m.program->tasks;
  std::vector<uint32_t> producer(m.program->tensors.size(), lower::kNoIndex);
  const std::vector<std::vector<uint32_t>> hazards =
      m.memory_plan ? sched::arenaHazards(*m.program, *m.memory_plan) : std::vector<std::vector<uint32_t>>{};
  size_t row = 0;
  for (const lower::Task& t : tasks) {
    sched::TaskWork w;
    if (t.kind == lower::TaskKind::Convert) {
      w.on_npu = false;
    } else {
      w = rows_work.at(row++);
      p.task_of_row.push_back(t.id);
    }
    w.reads.clear();
    for (uint32_t in : t.inputs)
      if (in < producer.size() && producer[in] != lower::kNoIndex &&
          std::find(w.reads.begin(), w.reads.end(), producer[in]) == w.reads.end())
        w.reads.push_back(producer[in]);
    if (t.id < hazards.size())
      for (uint32_t before : hazards[t.id])
        if (std::find(w.reads.begin(), w.reads.end(), before) == w.reads.end()) w.reads.push_back(before);
    std::sort(w.reads.begin(), w.reads.end());
    for (uint32_t out : t.outputs)
      if (out < producer.size()) producer[out] = t.id;
    p.work.push_back(std::move(w));
  }
  return p;
}

uint32_t defaultCores(const CompiledModel& m) {
  return m.options.single_core_mode ? 1u : static_cast<uint32_t>(m.soc->npu.cores);
}

}  // namespace

std::vector<sched::CoreSchedule> compiledCoreSchedules(const CompiledModel& m, perf::TilingCache* cache) {
  if (!m.program) return {};
  const ProgramWork p = programWork(m, cache);
  const double sync = static_cast<double>(m.soc->npu.core_sync_cycles);
  std::vector<sched::CoreSchedule> out;
  for (uint32_t k = 1; k <= defaultCores(m); ++k)
    out.push_back(sched::scheduleCores(p.work, k, sync, out.empty() ? nullptr : &out.back()));
  return out;
}

perf::PerfReport compiledPerf(const CompiledModel& m, perf::TilingCache* cache, uint32_t cores) {
  const uint32_t soc_cores = static_cast<uint32_t>(m.soc->npu.cores);
  if (cores > soc_cores)
    throw ConfigError(
        fmt::format("eval_perf: {} NPU cores requested, {} has {}", cores, m.soc->name, soc_cores));
  if (cores > 1 && m.options.single_core_mode)
    throw ConfigError(
        fmt::format("eval_perf: {} NPU cores requested, but the model was built with "
                    "single_core_mode=True (one core)",
                    cores));
  if (cores == 0) cores = defaultCores(m);
  if (!m.program) {
    perf::PerfOptions options = perfOptions(m);
    options.single_core_mode = cores == 1;
    return perf::evaluatePerf(*m.graph, *m.soc, options, cache);
  }
  ProgramWork p = programWork(m, cache);
  const double sync = static_cast<double>(m.soc->npu.core_sync_cycles);
  std::string source = m.origin ? "from the blob (CSCH)" : "from the compile";
  const sched::CoreSchedule* stored = nullptr;
  for (const sched::CoreSchedule& s : m.core_schedules)
    if (s.cores == cores) stored = &s;
  sched::CoreSchedule fresh;
  if (!stored) {
    fresh = sched::scheduleCores(p.work, cores, sync);
    stored = &fresh;
    source = m.origin
                 ? "decided afresh: the blob has no CSCH schedule for " + std::to_string(cores) + " core(s)"
                 : "decided afresh";
  }
  p.report.applySchedule(*stored, sched::timeSchedule(p.work, *stored, sync), p.task_of_row, source);
  return p.report;
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
