// Re-throwing an npuc error with context in front of its message, keeping its type, so a caller
// catching UnsupportedOpError still does after a frontend added the file name.
#pragma once

#include <string>

namespace npuc {

// Inside a catch block: re-throws the active npuc::Error as the same type with `prefix` first.
[[noreturn]] void rethrowWithPrefix(const std::string& prefix);

}  // namespace npuc
