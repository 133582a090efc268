// What every pass is given besides the graph: the optimization settings it must respect and the
// sinks for what it wants to tell the user (why a rewrite did not apply, why a loop was cut short).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "opset/fold_limit.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc {

// One "this rewrite did not apply here, because ..." record, kept so a user can ask why, say, a
// LayerNorm did not fuse.
struct MatchFailure {
  std::string pass;
  std::string pattern;
  std::string node;
  std::string op_type;
  std::string reason;
};

// The hardware a graph is being compiled for. Passes that depend on it (align_channels) read it
// here; none assumes a SoC of its own.
struct PassTarget {
  const SocProfile* soc = nullptr;
  NpuDType dtype = NpuDType::Int8;  // what the NPU computes in (Int8 for w8a8, Float16 for a float build)
  OpTargetMap op_target;            // nodes the user keeps on the CPU
};

struct PassContext {
  // RKNN meaning: 0 no optimization, 1-2 only numerics-preserving rewrites, 3 everything.
  int optimization_level = 3;
  int64_t fold_limit_bytes = kDefaultFoldLimitBytes;
  // Full sweeps the greedy pattern driver makes before it gives up and reports non-convergence.
  int max_greedy_iterations = 10;
  // Record MatchFailure entries (off makes the common no-match path allocation free).
  bool record_match_failures = true;
  // Absent in the target-independent pipeline (optimize() without a target).
  std::optional<PassTarget> target;

  // Name of the pass currently running; set by the pass manager, used to tag diagnostics.
  std::string current_pass;
  std::vector<MatchFailure> match_failures;
  std::vector<std::string> warnings;

  // True when rewrites that can change numerics (reassociation, reciprocal multiply) may run.
  bool allowsNumericsChange() const { return optimization_level >= 3; }
  void warn(std::string message) { warnings.push_back(current_pass + ": " + std::move(message)); }
};

}  // namespace npuc
