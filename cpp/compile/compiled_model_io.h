// The blob is the CompiledModel's serialization: one writer, one reader (docs/blob_format.md).
//
// Writing: META (the CompileOptions through compile/options_codec.h), GRPH, WGHT, then QUNT for an
// INT8 build, the program (TASK, PIPE, CPUO, NWGT) and the memory plan (MPLN), in that order.
// Reading parses the file once and checks every part against the others: the program and the
// memory plan must be those of the placement the recorded options give (op_target included), and
// the recorded `quantized` must agree with the presence of QUNT.
#pragma once

#include <optional>
#include <string>

#include "compile/compiled_model.h"

namespace npuc {

std::string serializeCompiledModel(const CompiledModel& model);
// Writes the blob to `path` (BlobError if it cannot be written). Deterministic: equal models give
// byte-identical files.
void writeCompiledModel(const CompiledModel& model, const std::string& path);

// Verifies and loads a blob; with `expected_soc`, a blob for another SoC is refused. BlobError
// naming the file for anything malformed or inconsistent. `custom_ops` becomes the loaded graph's
// (a blob keeps user-defined ops by name; running them needs the same registration).
CompiledModel loadCompiledModel(const std::string& path,
                                const std::optional<std::string>& expected_soc = std::nullopt,
                                std::shared_ptr<const CustomOpSet> custom_ops = nullptr);
CompiledModel readCompiledModel(const std::string& bytes, const std::optional<std::string>& expected_soc,
                                const std::string& origin, std::shared_ptr<const CustomOpSet> custom_ops = nullptr);

}  // namespace npuc
