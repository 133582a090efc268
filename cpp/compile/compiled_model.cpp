#include "compile/compiled_model.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compile/compiled_reports.h"
#include "lower/lower.h"

namespace npuc {

CompiledModel compileModel(std::shared_ptr<const Graph> graph, const quant::QuantPlan* plan,
                           const SocProfile& soc, CompileOptions options, perf::TilingCache* tiling_cache) {
  if (options.quantized != (plan != nullptr))
    throw ConfigError(std::string("compile: options say ") + (options.quantized ? "quantized" : "float") +
                      " but " + (plan ? "a quantization plan was given" : "no quantization plan was given"));
  if (plan) {
    // The scheme is decided once, in the plan; the options only record it.
    if (quantSchemeOf(options) != plan->scheme) {
      throw ConfigError(fmt::format("compile: options say quantized_dtype {} but the quantization plan is {}",
                                    quant::describeScheme(quantSchemeOf(options)),
                                    quant::describeScheme(plan->scheme)));
    }
    requireQuantizedDtype(soc, plan->scheme.dtype);
  }
  CompiledModel m;
  m.graph = std::move(graph);
  m.soc = &soc;
  if (plan) m.quant_plan = *plan;
  m.placement = partitionGraph(*m.graph, soc, options.op_target);
  lower::LowerOptions lo;
  lo.placement = &m.placement;
  lo.single_core_mode = options.single_core_mode;
  lo.plan = m.quantPlan();
  lo.tiling_cache = tiling_cache;
  m.program = lower::lowerGraph(*m.graph, soc, lo);
  m.memory_plan = memory::planNpuMemory(*m.graph, m.quantPlan(), soc, m.placement);
  m.options = std::move(options);
  // Decided once here, for every core count the runtime may be given; eval_perf reads them.
  m.core_schedules = compiledCoreSchedules(m, tiling_cache);
  return m;
}

}  // namespace npuc
