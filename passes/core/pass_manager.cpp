#include "passes/core/pass_manager.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "passes/core/pass_registry.h"

namespace npuc {

void verifyOptimizedGraph(const Graph& graph, const std::string& after) {
  try {
    graph.verify();
  } catch (const GraphError& e) {
    throw GraphError("after " + after + ": " + e.what());
  }
  for (const Node* n : graph.nodes()) {
    for (const Value* out : n->outputs()) {
      if (out->dtype() == DType::Undefined || !out->hasShape()) {
        throw GraphError("after " + after + ": output '" + out->name() + "' of node '" + n->name() + "' (" +
                         n->opType() + ") has no type; a rewrite created it without shape inference");
      }
    }
  }
}

PassManager::PassManager(PassManagerOptions options) : options_(std::move(options)) {
  if (options_.optimization_level < 0 || options_.optimization_level > 3) {
    throw ConfigError("optimization_level must be 0, 1, 2 or 3, got " +
                      std::to_string(options_.optimization_level));
  }
  for (const std::string& name : options_.disable_passes) {
    if (!isRegisteredPass(name)) {
      std::string valid;
      for (const std::string& v : registeredPassNames()) valid += (valid.empty() ? "" : ", ") + v;
      throw ConfigError("disable_passes: unknown pass '" + name + "'; valid pass names: " + valid);
    }
  }
  if (options_.max_rounds < 1) throw ConfigError("max_rounds must be at least 1");
}

PassManager::~PassManager() = default;

PassManager& PassManager::addStage(const std::string& stage, const std::vector<std::string>& passes) {
  Stage s{stage, {}};
  for (const std::string& name : passes) s.passes.push_back(createPass(name));
  stages_.push_back(std::move(s));
  return *this;
}

bool PassManager::enabled(const Pass& pass) const {
  const auto& off = options_.disable_passes;
  if (std::find(off.begin(), off.end(), pass.name()) != off.end()) return false;
  const int level = options_.optimization_level;
  if (level < pass.minOptimizationLevel()) return false;
  return !pass.changesNumerics() || level >= 3;
}

size_t PassManager::runPass(Pass& pass, Graph& graph, PassContext& ctx, OptimizationReport& report) const {
  ctx.current_pass = pass.name();
  const size_t failures_before = ctx.match_failures.size();
  const size_t changes = pass.run(graph, ctx);
  // Only the failures of a pass's latest run describe the final graph; drop its older ones.
  std::vector<MatchFailure> kept;
  for (size_t i = 0; i < ctx.match_failures.size(); ++i) {
    if (i >= failures_before || ctx.match_failures[i].pass != ctx.current_pass) {
      kept.push_back(std::move(ctx.match_failures[i]));
    }
  }
  ctx.match_failures = std::move(kept);
  report.addFiring(pass.name(), changes);
  if (changes > 0 && options_.verify_each)
    verifyOptimizedGraph(graph, std::string("pass '") + pass.name() + "'");
  return changes;
}

size_t PassManager::runStage(const Stage& stage, Graph& graph, PassContext& ctx,
                             OptimizationReport& report) const {
  size_t total = 0;
  for (int rep = 0; rep < options_.max_rounds; ++rep) {
    size_t changes = 0;
    for (const auto& pass : stage.passes) {
      if (enabled(*pass)) changes += runPass(*pass, graph, ctx, report);
    }
    total += changes;
    if (changes == 0) return total;
  }
  ctx.current_pass = "stage " + stage.name;
  ctx.warn("did not reach a fixed point after " + std::to_string(options_.max_rounds) + " repetitions");
  return total;
}

OptimizationReport PassManager::run(Graph& graph) const {
  OptimizationReport report;
  report.optimization_level = options_.optimization_level;
  report.nodes_before = graph.numNodes();
  for (const Stage& stage : stages_) {
    for (const auto& pass : stage.passes) {
      const bool disabled =
          std::count(options_.disable_passes.begin(), options_.disable_passes.end(), pass->name()) != 0;
      std::vector<std::string>& list = disabled ? report.disabled : report.skipped_for_level;
      if ((disabled || !enabled(*pass)) && std::count(list.begin(), list.end(), pass->name()) == 0) {
        list.push_back(pass->name());
      }
    }
  }
  PassContext ctx;
  ctx.optimization_level = options_.optimization_level;
  ctx.fold_limit_bytes = options_.fold_limit_bytes;
  ctx.record_match_failures = options_.record_match_failures;
  ctx.target = options_.target;

  int dump_index = 0;
  if (options_.on_stage) options_.on_stage("import", dump_index++, graph);
  bool converged = false;
  bool changed_after_first_round = false;
  while (!converged && static_cast<int>(report.rounds) < options_.max_rounds) {
    ++report.rounds;
    size_t changes = 0;
    for (const Stage& stage : stages_) {
      changes += runStage(stage, graph, ctx, report);
      if (report.rounds == 1 && options_.on_stage) options_.on_stage(stage.name, dump_index++, graph);
    }
    converged = changes == 0;
    if (report.rounds > 1 && changes > 0) changed_after_first_round = true;
  }
  if (!converged) {
    ctx.current_pass = "pass manager";
    ctx.warn("pipeline did not reach a fixed point after " + std::to_string(options_.max_rounds) + " rounds");
  }
  if (changed_after_first_round && options_.on_stage) options_.on_stage("optimized", dump_index++, graph);
  report.nodes_after = graph.numNodes();
  report.match_failures = std::move(ctx.match_failures);
  report.warnings = std::move(ctx.warnings);
  return report;
}

}  // namespace npuc
