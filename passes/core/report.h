// What an optimization run did, for the user (printed by the CLI / Toolkit.build) and for tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "passes/core/pass_context.h"

namespace npuc {

struct PassFiring {
  std::string pass;
  size_t changes = 0;
};

struct OptimizationReport {
  int optimization_level = 0;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  // Full rounds of the pipeline until nothing changed.
  size_t rounds = 0;
  // Passes that changed something, in order of first firing, with summed change counts.
  std::vector<PassFiring> fired;
  // Passes not run: disabled by name, or excluded by the optimization level.
  std::vector<std::string> disabled;
  std::vector<std::string> skipped_for_level;
  // Why rewrites did not apply (state after the last run of each pass).
  std::vector<MatchFailure> match_failures;
  // Non-convergence and other things a user should know.
  std::vector<std::string> warnings;

  // Total changes of `pass` (0 if it never fired).
  size_t changesBy(const std::string& pass) const;
  void addFiring(const std::string& pass, size_t changes);
  // Multi-line human-readable summary; at most `max_failures` match failures are listed.
  std::string toText(size_t max_failures = 50) const;
};

}  // namespace npuc
