#include "sched/arena_hazards.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace npuc::sched {

namespace {

struct Range {
  uint64_t begin = 0, end = 0;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

memory::BufferFormat formatOf(lower::TensorDevice d) {
  return d == lower::TensorDevice::Npu ? memory::BufferFormat::Npu : memory::BufferFormat::Host;
}

}  // namespace

std::vector<std::vector<uint32_t>> arenaHazards(const lower::LoweredProgram& program,
                                                const memory::NpuMemoryPlan& plan) {
  std::map<std::pair<std::string, memory::BufferFormat>, Range> arena;
  for (const memory::PlannedBuffer& b : plan.buffers)
    if (b.home == memory::BufferHome::Arena && b.bytes > 0)
      arena[{b.value, b.format}] = {b.offset, b.offset + b.bytes};
  std::vector<std::optional<Range>> range_of(program.tensors.size());
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const lower::ProgramTensor& t = program.tensors[i];
    if (auto it = arena.find({t.value, formatOf(t.device)}); it != arena.end()) range_of[i] = it->second;
  }
  auto ranges = [&](const std::vector<uint32_t>& ids) {
    std::vector<Range> out;
    for (uint32_t id : ids)
      if (id < range_of.size() && range_of[id]) out.push_back(*range_of[id]);
    return out;
  };
  // What each task touches: the ranges it reads and writes.
  std::vector<std::vector<Range>> touched(program.tasks.size());
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    touched[i] = ranges(program.tasks[i].inputs);
    for (const Range& r : ranges(program.tasks[i].outputs)) touched[i].push_back(r);
  }
  std::vector<std::vector<uint32_t>> out(program.tasks.size());
  for (size_t j = 0; j < program.tasks.size(); ++j) {
    const std::vector<Range> writes = ranges(program.tasks[j].outputs);
    if (writes.empty()) continue;
    for (size_t i = 0; i < j; ++i) {
      const bool clash = std::any_of(touched[i].begin(), touched[i].end(), [&](const Range& t) {
        return std::any_of(writes.begin(), writes.end(), [&](const Range& w) { return w.overlaps(t); });
      });
      if (clash) out[j].push_back(static_cast<uint32_t>(i));
    }
  }
  return out;
}

}  // namespace npuc::sched
