// The one codec between CompileOptions and the build options a blob's META section records
// (key -> Python-literal text, compile/py_literal.h). Effective values are written out in full
// (defaults included, aliases canonical, op_target sorted), so two builds with the same effective
// settings record the same bytes.
#pragma once

#include <map>
#include <string>

#include "compile/compile_options.h"

namespace npuc {

using RecordedOptions = std::map<std::string, std::string>;

RecordedOptions encodeCompileOptions(const CompileOptions& options);

// ConfigError naming the option and the limit when a recorded key or value is longer than the blob
// reader accepts (blob/blob_limits.h). The blob writer calls it before writing; Toolkit.config
// calls it (through CompileOptions.check_blob_limits) when custom_string is set.
void checkRecordedOptionLimits(const RecordedOptions& recorded);

// Reads what encodeCompileOptions (or an earlier npuc's Toolkit) recorded. Absent keys keep their
// defaults, except `quantized`, which the caller decides from the blob's sections when absent;
// unknown keys are ignored (a newer minor version may record more). BlobError naming `origin` and
// the key for a value that does not parse.
CompileOptions decodeCompileOptions(const RecordedOptions& recorded, const std::string& origin);

}  // namespace npuc
