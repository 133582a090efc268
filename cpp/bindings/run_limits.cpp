#include "bindings/run_limits.h"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/error.h"

namespace npuc::bindings {

namespace py = pybind11;

namespace {

const char* const kByteCountHelp =
    "a positive number of bytes, optionally with K, M, G or T (1024-based): 8G";

// "8G" -> 8 << 30; 0 when `text` is not a positive byte count (or overflows 64 bits).
uint64_t parseByteCount(const std::string& text) {
  size_t end = 0;
  uint64_t value = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
    const uint64_t digit = static_cast<uint64_t>(text[end] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return 0;
    value = value * 10 + digit;
    ++end;
  }
  if (end == 0) return 0;
  int shift = 0;
  if (end + 1 == text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[end]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: return 0;
    }
  } else if (end != text.size()) {
    return 0;
  }
  if (value > (std::numeric_limits<uint64_t>::max() >> shift)) return 0;
  return value << shift;
}

}  // namespace

RunMemoryLimits runMemoryLimits(const py::object& max_run_bytes) {
  RunMemoryLimits limits;
  if (max_run_bytes.is_none()) {
    const char* env = std::getenv(kMaxRunBytesEnvVar);
    if (!env || !*env) return limits;
    limits.max_run_bytes = parseByteCount(env);
    if (!limits.max_run_bytes) {
      throw ConfigError(std::string(kMaxRunBytesEnvVar) + "='" + env + "' is not " + kByteCountHelp);
    }
    return limits;
  }
  const std::string shown = py::repr(max_run_bytes).cast<std::string>();
  if (py::isinstance<py::str>(max_run_bytes)) {
    limits.max_run_bytes = parseByteCount(max_run_bytes.cast<std::string>());
  } else if (!py::isinstance<py::bool_>(max_run_bytes) && PyIndex_Check(max_run_bytes.ptr())) {
    // Any integer (numpy's too) through its decimal text: negative or huge values are judged alike.
    const auto as_int = py::reinterpret_steal<py::object>(PyNumber_Index(max_run_bytes.ptr()));
    if (!as_int) throw py::error_already_set();
    limits.max_run_bytes = parseByteCount(py::str(as_int).cast<std::string>());
  }
  if (!limits.max_run_bytes) throw ConfigError("max_run_bytes=" + shown + " is not " + kByteCountHelp);
  return limits;
}

}  // namespace npuc::bindings
