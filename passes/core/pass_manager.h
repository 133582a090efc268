// Runs named pass lists ("stages") over a graph to a fixed point, honouring optimization_level
// and disable_passes, verifying the graph after every pass when asked, and collecting an
// OptimizationReport.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/pass.h"
#include "passes/core/report.h"

namespace npuc {

// Called with the stage name and a running index (0 is the graph as given, "import") after each
// stage of the first round, and once more as "optimized" if later rounds changed the graph. The
// Python layer writes check<index>_<stage>.onnx from it.
using StageCallback = std::function<void(const std::string& stage, int index, const Graph& graph)>;

#ifdef NDEBUG
constexpr bool kVerifyPassesByDefault = false;
#else
constexpr bool kVerifyPassesByDefault = true;
#endif

struct PassManagerOptions {
  int optimization_level = 3;  // 0-3, RKNN meaning (see PassContext)
  std::vector<std::string> disable_passes;
  int64_t fold_limit_bytes = kDefaultFoldLimitBytes;
  // Rounds of the whole stage list, and repetitions of one stage, before giving up (reported).
  int max_rounds = 8;
  // graph.verify() plus "every node output is typed" after each pass that changed something.
  bool verify_each = kVerifyPassesByDefault;
  bool record_match_failures = true;
  std::optional<PassTarget> target;  // handed to every pass (PassContext::target)
  StageCallback on_stage;
};

class PassManager {
 public:
  // Throws ConfigError for a level outside 0-3 or an unknown name in disable_passes (the message
  // lists the valid names).
  explicit PassManager(PassManagerOptions options);
  ~PassManager();

  // Appends a stage: the passes run in order, repeatedly, until none of them changes anything.
  // Throws ConfigError for an unknown pass name.
  PassManager& addStage(const std::string& stage, const std::vector<std::string>& passes);

  OptimizationReport run(Graph& graph) const;

 private:
  struct Stage {
    std::string name;
    std::vector<std::unique_ptr<Pass>> passes;
  };
  bool enabled(const Pass& pass) const;
  size_t runStage(const Stage& stage, Graph& graph, PassContext& ctx, OptimizationReport& report) const;
  size_t runPass(Pass& pass, Graph& graph, PassContext& ctx, OptimizationReport& report) const;

  PassManagerOptions options_;
  std::vector<Stage> stages_;
};

// Throws GraphError (naming `after`) if the graph is structurally broken or a node output has no
// type. Used between passes and by tests.
void verifyOptimizedGraph(const Graph& graph, const std::string& after);

}  // namespace npuc
