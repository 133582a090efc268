#include "passes/core/report.h"

#include <fmt/format.h>

#include <iterator>

namespace npuc {

size_t OptimizationReport::changesBy(const std::string& pass) const {
  for (const PassFiring& f : fired) {
    if (f.pass == pass) return f.changes;
  }
  return 0;
}

void OptimizationReport::addFiring(const std::string& pass, size_t changes) {
  if (changes == 0) return;
  for (PassFiring& f : fired) {
    if (f.pass == pass) {
      f.changes += changes;
      return;
    }
  }
  fired.push_back({pass, changes});
}

std::string OptimizationReport::toText(size_t max_failures) const {
  fmt::memory_buffer os;
  auto out = std::back_inserter(os);
  fmt::format_to(out, "graph optimization (level {}): {} -> {} nodes in {} round{}\n", optimization_level,
                 nodes_before, nodes_after, rounds, rounds == 1 ? "" : "s");
  if (fired.empty()) fmt::format_to(out, "  no pass changed the graph\n");
  for (const PassFiring& f : fired) fmt::format_to(out, "  {}: {} change(s)\n", f.pass, f.changes);
  if (!disabled.empty()) fmt::format_to(out, "  disabled: {}\n", fmt::join(disabled, ", "));
  if (!skipped_for_level.empty()) {
    fmt::format_to(out, "  not run at level {}: {}\n", optimization_level,
                   fmt::join(skipped_for_level, ", "));
  }
  for (const std::string& w : warnings) fmt::format_to(out, "  warning: {}\n", w);
  if (!match_failures.empty()) {
    fmt::format_to(out, "  rewrites that did not apply ({}):\n", match_failures.size());
    for (size_t i = 0; i < match_failures.size() && i < max_failures; ++i) {
      const MatchFailure& f = match_failures[i];
      fmt::format_to(out, "    {}/{} at '{}' ({}): {}\n", f.pass, f.pattern, f.node, f.op_type, f.reason);
    }
    if (match_failures.size() > max_failures) {
      fmt::format_to(out, "    ... and {} more\n", match_failures.size() - max_failures);
    }
  }
  return fmt::to_string(os);
}

}  // namespace npuc
