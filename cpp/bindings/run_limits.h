// The caller's cap on one run's memory (runtime/run_memory.h) as the Python API takes it: the
// max_run_bytes argument of Runtime.run and QuantizedModel.run, else the NPUC_MAX_RUN_BYTES
// environment variable. The variable is read here, at the Python edge; the library reads none.
#pragma once

#include <pybind11/pybind11.h>

#include "runtime/run_memory.h"

namespace npuc::bindings {

// Name of the environment variable the cap defaults to.
inline constexpr const char* kMaxRunBytesEnvVar = "NPUC_MAX_RUN_BYTES";

// `max_run_bytes`: None (then the environment variable, then no cap), a positive int, or a string
// of digits with an optional K, M, G or T suffix (KiB ... TiB: "512M", "8G"). ConfigError naming
// the argument or the variable and the value otherwise.
RunMemoryLimits runMemoryLimits(const pybind11::object& max_run_bytes);

}  // namespace npuc::bindings
