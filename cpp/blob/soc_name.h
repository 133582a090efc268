// SoC names as the blob records them.
#pragma once

#include <string>

namespace npuc::blob {

// The catalogue's canonical name for a known SoC name or alias ("RK3588" -> "rk3588"); other
// names (profiles this npuc does not have) lower-cased. ConfigError for an empty name.
std::string canonicalSocName(const std::string& name);

}  // namespace npuc::blob
