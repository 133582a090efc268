// Whole-file writes that never leave a half-written file behind.
#pragma once

#include <string>
#include <string_view>

namespace npuc {

// Writes `bytes` to a temporary file next to `path` and renames it into place, so a failure (full
// disk, a killed process) leaves `path` as it was and no temporary behind. Returns an empty string
// on success, else why it failed (the caller wraps it in its own typed error).
std::string writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace npuc
