// The on-disk layout constants of the .npub container (docs/blob_format.md describes every field).
//
// A blob is: a fixed 128-byte header, a section table (one 32-byte entry per section), then the
// sections, each starting at a multiple of kBlobAlignment. All integers are little-endian. The
// checksum (XXH3-128) covers every byte of the file except the 16-byte checksum field itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "blob/blob_limits.h"
#include "ir/tensor.h"

namespace npuc::blob {

// The blob stores tensor bytes in host order and maps them in place; npuc only targets
// little-endian hosts (x86-64, AArch64), so refuse to build anywhere else rather than misread.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .npub format is little-endian");

constexpr char kMagic[4] = {'N', 'P', 'U', 'B'};

// Major: bumped on any change an older reader would misread (it refuses a newer major).
// Minor: bumped for additive changes (new optional sections); an older reader of the same major
// reads the blob and ignores what it does not know.
// 1.1: one writer, one section order; 1.2: the SDIG section of per-section digests; 2.0: a weight
// packed for an NPU task is stored once, in NWGT (a GRAPH constant with layout tag NpuPacked, no
// WGHT bytes), which a 1.x reader would misread (docs/blob_format.md); 2.1: issue #17's dtypes (QUNT
// codec 3 with the plan's scheme and weight groups; int16 / int4 packed weights and tensors in TASK
// and NWGT), which a 2.0 reader refuses by the QUNT version it names; 2.2: issue #18's optional
// CSCH (multi-core schedules) and, for config(dynamic_input), the required SHPV (the other shape
// sets), which a 2.1 reader refuses as an unknown required section.
constexpr uint16_t kFormatMajor = 2;
constexpr uint16_t kFormatMinor = 2;
// The oldest format this reader accepts: 1.2. Blobs before 1.2 carry no section digests, so a
// section spliced in from another blob could not be told apart; they are refused, naming their
// version. A 1.2 blob is a 2.0 blob without NPU-packed constants, so it still loads.
constexpr uint16_t kOldestReadableMajor = 1;
constexpr uint16_t kOldestReadableMinor = 2;
// The first format whose GRAPH may hold NpuPacked constants.
constexpr uint16_t kPackedConstantsMajor = 2;

// Sections and every weight inside WEIGHTS start at multiples of this, so a memory-mapped blob
// hands out tensors aligned as npuc allocates them (kTensorAlignment, the one number in ir/tensor.h).
constexpr uint64_t kBlobAlignment = kTensorAlignment;

// ---- fixed header (offsets in bytes from the start of the file)
constexpr size_t kHeaderSize = 128;
constexpr size_t kOffMagic = 0;     // char[4]
constexpr size_t kOffMajor = 4;     // u16
constexpr size_t kOffMinor = 6;     // u16
constexpr size_t kOffChecksum = 8;  // u64 low, u64 high of XXH3-128
constexpr size_t kChecksumSize = 16;
constexpr size_t kOffFileSize = 24;      // u64
constexpr size_t kOffHeaderSize = 32;    // u32
constexpr size_t kOffSectionCount = 36;  // u32
constexpr size_t kOffSectionTable = 40;  // u64
constexpr size_t kOffProducer = 48;      // char[64], NUL-padded
constexpr size_t kProducerSize = 64;
// Bytes 112..127 are reserved and must be zero.
constexpr size_t kOffReserved = 112;

// ---- section table entry: u32 kind, u32 flags, u64 offset, u64 size, u64 reserved (zero)
constexpr size_t kSectionEntrySize = 32;
// A reader that does not know a section's kind refuses the blob if this flag is set and skips the
// section otherwise.
constexpr uint32_t kSectionRequired = 1u << 0;
constexpr uint32_t kKnownSectionFlags = kSectionRequired;

// Section kinds are four ASCII characters read as a little-endian u32, so a hex dump shows them.
constexpr uint32_t fourcc(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}
std::string fourccName(uint32_t kind);  // "META"; non-printable bytes as \xNN

// Sections this version reads.
constexpr uint32_t kSectionMeta = fourcc("META");
constexpr uint32_t kSectionGraph = fourcc("GRPH");
constexpr uint32_t kSectionWeights = fourcc("WGHT");
// The digest of every other section's payload (blob/section_digests.h); written last, optional so
// a 1.1 reader skips it.
constexpr uint32_t kSectionDigests = fourcc("SDIG");
// Reserved for the NPU lowering (written by later producers; a 1.0 reader keeps them as raw
// bytes in LoadedBlob::extra_sections when optional, refuses them when required).
constexpr uint32_t kSectionTasks = fourcc("TASK");
constexpr uint32_t kSectionPipelines = fourcc("PIPE");
constexpr uint32_t kSectionMemoryPlan = fourcc("MPLN");
constexpr uint32_t kSectionQuant = fourcc("QUNT");
constexpr uint32_t kSectionCpuOps = fourcc("CPUO");
// Packed NPU weights (lower/lowered_program.h). Since 2.0 also where the GRAPH's NpuPacked
// constants are stored, so the container checks their extents against it.
constexpr uint32_t kSectionNpuWeights = fourcc("NWGT");
// config(dynamic_input): the other input-shape sets' compiled models, each a blob whose section
// payloads are stored as references into this blob's sections where bytes are equal (weights once;
// compile/shape_variants_codec.h). Required: a reader that skipped it would run one shape only.
constexpr uint32_t kSectionShapeVariants = fourcc("SHPV");

// ---- GRAPH section encodings
// Value flags.
constexpr uint8_t kValueHasShape = 1u << 0;
constexpr uint8_t kValueConstant = 1u << 1;
constexpr uint8_t kValueHasQuant = 1u << 2;
constexpr uint8_t kKnownValueFlags = kValueHasShape | kValueConstant | kValueHasQuant;

// How a constant's elements are stored. Plain: row-major bytes in WEIGHTS (the IR's layout).
// NpuPacked (2.0): no bytes in WEIGHTS; the record's offset and size name the entry in NWGT that
// the NPU task whose first node reads the constant as its weight packed (int8 for an INT8 task,
// IEEE half for an FP16 one), and the compiled-model loader rebuilds the float32 tensor from it
// (compile/packed_constants.h). Non-constant values are always Plain.
enum class Layout : uint8_t { Plain = 0, NpuPacked = 1 };
constexpr uint8_t kMaxLayoutTag = 1;

// A node input slot left empty (an omitted optional input).
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
// Unknown dims are stored as -1; anything below is corrupt.
constexpr int64_t kUnknownDim = -1;

}  // namespace npuc::blob
