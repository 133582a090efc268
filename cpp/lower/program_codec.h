// The LoweredProgram as blob sections (layout in docs/blob_format.md):
//   TASK  tensor table + tasks in execution order
//   PIPE  unique pipelines (digest, op pattern, canonical params; the digest is re-checked)
//   CPUO  host ops (graph node index, op type, placement reason)
//   NWGT  packed NPU weights (raw; tasks point into it)
// Each payload starts with its codec version. Decoding checks every count against the bytes
// left, every index against its table and every weight range against NWGT, and throws BlobError
// naming the section, the field and its offset in the section.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "lower/lowered_program.h"

namespace npuc::lower {

constexpr uint32_t kProgramCodecVersion = 1;

struct ProgramSections {
  std::string tasks, pipelines, cpu_ops;  // small; decoded, then dropped
  SharedBytes packed_weights;             // the weights: a loaded blob's stays a view of its mapping
};

ProgramSections encodeProgram(const LoweredProgram& program);
LoweredProgram decodeProgram(const ProgramSections& sections);

// The four sections as blob sections: optional (a reader without the lowering still runs the
// graph; one that has it verifies them), or `required` when the graph stores weights only in NWGT
// (blob format 2.0, NpuPacked constants), which then cannot be read without them.
std::vector<blob::ExtraSection> programExtraSections(const LoweredProgram& program, bool required = false);
// The sections found in a loaded blob; false when it carries no TASK section. BlobError when only
// some of TASK/PIPE/CPUO are present.
bool findProgramSections(const std::vector<blob::ExtraSection>& extra, ProgramSections* out);

}  // namespace npuc::lower
