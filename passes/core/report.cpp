#include "passes/core/report.h"

#include <sstream>

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

namespace {
std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}
}  // namespace

std::string OptimizationReport::toText(size_t max_failures) const {
  std::ostringstream os;
  os << "graph optimization (level " << optimization_level << "): " << nodes_before << " -> " << nodes_after
     << " nodes in " << rounds << " round" << (rounds == 1 ? "" : "s") << "\n";
  if (fired.empty()) os << "  no pass changed the graph\n";
  for (const PassFiring& f : fired) os << "  " << f.pass << ": " << f.changes << " change(s)\n";
  if (!disabled.empty()) os << "  disabled: " << joined(disabled) << "\n";
  if (!skipped_for_level.empty()) {
    os << "  not run at level " << optimization_level << ": " << joined(skipped_for_level) << "\n";
  }
  for (const std::string& w : warnings) os << "  warning: " << w << "\n";
  if (!match_failures.empty()) {
    os << "  rewrites that did not apply (" << match_failures.size() << "):\n";
    for (size_t i = 0; i < match_failures.size() && i < max_failures; ++i) {
      const MatchFailure& f = match_failures[i];
      os << "    " << f.pass << "/" << f.pattern << " at '" << f.node << "' (" << f.op_type
         << "): " << f.reason << "\n";
    }
    if (match_failures.size() > max_failures) {
      os << "    ... and " << match_failures.size() - max_failures << " more\n";
    }
  }
  return os.str();
}

}  // namespace npuc
