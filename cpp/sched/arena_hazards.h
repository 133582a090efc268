// Arena reuse as a scheduling constraint (issue #18). The memory plan (memory/npu_memory_plan.h)
// lets a task write over the bytes of tensors whose last reader ran earlier in program order. On
// one core "earlier" means "finished"; on several it does not, so a task placed on another core
// could overwrite a tensor an earlier task is still reading (or writing). These are the extra
// dependencies that keep a multi-core schedule as safe as the program order it was planned for.
#pragma once

#include <cstdint>
#include <vector>

#include "lower/lowered_program.h"
#include "memory/npu_memory_plan.h"

namespace npuc::sched {

// Per program task (in program order): the earlier tasks that read or write an arena range one of
// its outputs overlaps, ascending. Tensors outside the arena (graph inputs and outputs in their
// own buffers) or absent from the plan add nothing.
std::vector<std::vector<uint32_t>> arenaHazards(const lower::LoweredProgram& program,
                                                const memory::NpuMemoryPlan& plan);

}  // namespace npuc::sched
