// The compiled model: every decision of one compile, made once, by compileModel(). The blob is its
// serialization and nothing else (compile/compiled_model_io.h); loading a blob gives the same
// object back; eval_perf costs its program's tasks, each in its own dtype, and eval_memory reads
// its memory plan (compile/compiled_reports.h). Nothing downstream re-derives the placement, the
// task boundaries or a precision from option strings.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile_options.h"
#include "ir/graph.h"
#include "lower/lowered_program.h"
#include "memory/npu_memory_plan.h"
#include "perf/tiling.h"
#include "quant/graph/quant_plan.h"
#include "sched/core_schedule.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc {

// Where a loaded model came from: the blob's provenance and layout (eval_memory's "other" bytes).
struct BlobOrigin {
  std::string path;
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string producer;
  std::map<std::string, std::string> recorded_options;  // META verbatim, for display
  std::array<uint8_t, 16> model_digest{};               // META's digest of the graph
  std::vector<uint32_t> extra_sections;                 // kinds past META/GRPH/WGHT, file order
  struct Section {
    uint32_t kind = 0;
    bool required = false;
    uint64_t offset = 0, size = 0;
  };
  std::vector<Section> sections;  // the whole section table, file order (what `npuc info` lists)
  uint64_t file_bytes = 0;
  uint64_t weight_section_bytes = 0;         // WGHT
  uint64_t packed_weight_section_bytes = 0;  // NWGT
};

struct CompiledModel {
  std::shared_ptr<const Graph> graph;  // optimized (and, when quantized, the plan's) graph
  const SocProfile* soc = nullptr;
  CompileOptions options;
  std::optional<quant::QuantPlan> quant_plan;  // an INT8 build; absent: a float build run in FP16
  PartitionReport placement;                   // NPU/CPU per node, with the reason of every fallback
  // What the NPU runtime executes, and its activation arena. Absent only in a blob written before
  // npuc lowered (format 1.0 without TASK / MPLN): reports then plan afresh and say so.
  std::optional<lower::LoweredProgram> program;
  std::optional<memory::NpuMemoryPlan> memory_plan;
  std::optional<BlobOrigin> origin;  // set when loaded from a blob
  // Issue #18. Multi-core: the program's schedule for each number of usable NPU cores (1 .. the
  // SoC's; only 1 with single_core_mode), eval_perf reads the one init_runtime's core_mask gives.
  std::vector<sched::CoreSchedule> core_schedules;
  // config(dynamic_input): the shape sets after the first (this model is the first), each compiled
  // whole with the same SoC, options and quantization plan; the blob stores their packed weights
  // once. A variant's own shape_variants is empty. inference() picks the one the input shapes match.
  std::vector<CompiledModel> shape_variants;

  const quant::QuantPlan* quantPlan() const { return quant_plan ? &*quant_plan : nullptr; }
};

// The one compile driver: places `graph` on `soc` (op_target honoured), lowers it to the program
// (tasks, tiling, pipelines, packed weights) and plans its activation memory, all from the one
// placement. `plan`: the quantization plan of an INT8 build (must be for `graph`), null for a float
// build. `options.quantized` must agree with `plan`. Throws what partitioning (ConfigError for a
// bad op_target), lowering and planning throw.
CompiledModel compileModel(std::shared_ptr<const Graph> graph, const quant::QuantPlan* plan,
                           const SocProfile& soc, CompileOptions options,
                           perf::TilingCache* tiling_cache = nullptr);

}  // namespace npuc
