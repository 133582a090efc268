#include "blob/soc_name.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "target/soc_profile.h"

namespace npuc::blob {

std::string canonicalSocName(const std::string& name) {
  if (name.empty()) throw ConfigError("blob: the target SoC name is empty");
  try {
    return socProfile(name).name;
  } catch (const ConfigError&) {
    // Not in this npuc's catalogue: still comparable, case-insensitively.
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return lower;
  }
}

}  // namespace npuc::blob
