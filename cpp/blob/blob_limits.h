// Every limit the .npub reader enforces on what a blob declares, in one place. The reader refuses
// anything beyond them as corrupt; the writer refuses to produce anything beyond them (BlobError or,
// for a build option, ConfigError, naming the field and the limit); Toolkit.config checks
// custom_string against them early (exposed to Python as _npuc.BLOB_LIMITS). The section codecs
// outside cpp/blob (TASK/PIPE/CPUO, MPLN, QUNT) read and write with the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npuc::blob {

// Names: the graph's, values', nodes', op types, domains, attribute / metadata / opset keys, build
// option keys, the SoC name, and the names inside the program, memory plan and quantization plan.
constexpr size_t kMaxNameBytes = size_t{1} << 16;
// Text: string attributes, metadata values, recorded build option values (a large op_target or
// hybrid_layers list), pipeline parameters, CPU placement reasons.
constexpr size_t kMaxTextBytes = size_t{1} << 24;
// Largest rank a shape may declare (ONNX has no limit; real models stay far below).
constexpr uint32_t kMaxRank = 32;
// More sections than this is not a blob npuc wrote; bounds the table before reading it.
constexpr uint32_t kMaxSections = 64;

}  // namespace npuc::blob
