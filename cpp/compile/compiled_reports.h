// The reports of a compiled model read the model: eval_perf costs its program's NPU and CPU tasks,
// each in the dtype the program computes it in (hybrid FP16 layers as FP16, CPU fallbacks as FP32),
// on its placement; eval_memory reports its memory plan and the size of its blob.
#pragma once

#include "compile/compiled_model.h"
#include "memory/memory_report.h"
#include "perf/perf_eval.h"

namespace npuc {

// The dtype the model computes in, as eval_perf's header names it: INT8 for a quantized build, else
// the SoC's 16-bit float format (FP16, or INT16 on a profile without FP16, as the lowering does).
NpuDType compiledDType(const CompiledModel& model);

// `cache` may be null. A model without a program (an old blob) is costed as it would compile now.
// `cores`: the NPU cores the runtime may use (init_runtime's core_mask); 0: all the SoC's, or one
// with single_core_mode. The program is placed on them by the model's core schedule for that many
// cores (decided afresh, and said so in the report, when the model has none: a blob without CSCH).
// ConfigError when `cores` exceeds the SoC's, or is above 1 for a single_core_mode build.
perf::PerfReport compiledPerf(const CompiledModel& model, perf::TilingCache* cache = nullptr,
                              uint32_t cores = 0);

// The core schedules compileModel records: one per number of usable cores, 1 .. the SoC's (only 1
// with single_core_mode), each never slower than the one before.
std::vector<sched::CoreSchedule> compiledCoreSchedules(const CompiledModel& model,
                                                       perf::TilingCache* cache = nullptr);

// The memory report: the stored plan of a loaded blob (or the compile's plan), the blob's sizes
// (its file; for a model compiled in memory, the bytes the writer produces).
memory::MemoryReport compiledMemory(const CompiledModel& model);

}  // namespace npuc
