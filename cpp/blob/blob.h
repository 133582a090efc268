// The .npub container: write a compiled model to a versioned, checksummed blob, and load it back
// with everything verified before any of it is used. Layout: docs/blob_format.md.
//
// Loading refuses (BlobError naming what is wrong and its file offset): a file that is not a blob,
// a truncated or padded file, a flipped byte (checksum), a newer major format version, a required
// section this npuc does not know, any out-of-range size / offset / index / enum, and a blob for a
// SoC other than the expected one. Writing is deterministic: identical inputs and options give
// byte-identical blobs (no timestamps, no pointer-ordered containers).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/shared_bytes.h"
#include "ir/graph.h"

namespace npuc::blob {

// Quantization parameters of one value (per tensor: one scale; per channel: one per index of `axis`).
struct QuantParams {
  int32_t axis = -1;  // -1: per tensor
  std::vector<float> scales;
  std::vector<int32_t> zero_points;  // same length as scales
  bool operator==(const QuantParams& o) const {
    return axis == o.axis && scales == o.scales && zero_points == o.zero_points;
  }
};

// A section another component encodes itself (tasks, pipelines, memory plan, ...). The container
// stores it verbatim; `required` tells readers that do not know the kind to refuse the blob. A
// loaded blob's sections are views of its verified bytes (a file's mapping), not copies.
struct ExtraSection {
  uint32_t kind = 0;  // fourcc(), see blob_format.h; must not be META/GRPH/WGHT
  bool required = false;
  SharedBytes bytes;
};

// A float constant stored only as an NPU task's packed weights (format 2.0, layout NpuPacked):
// its bytes are the NWGT entry [offset, offset + size), not in WGHT. The container checks the
// extent; the compiled-model loader rebuilds the tensor (compile/packed_constants.h).
struct PackedConstant {
  std::string value;  // the graph constant
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const PackedConstant& o) const {
    return value == o.value && offset == o.offset && size == o.size;
  }
};

struct BlobWriteOptions {
  std::string soc;                             // target SoC (name or alias; stored canonical)
  std::map<std::string, std::string> options;  // build options as given to the compiler
  std::map<std::string, QuantParams> quant;    // by value name; optional
  std::vector<ExtraSection> extra_sections;
  // Constants whose bytes the NWGT extra section holds (by value name); they get no WGHT bytes.
  std::map<std::string, PackedConstant> packed_constants;
};

using Digest = std::array<uint8_t, 16>;
std::string digestHex(const Digest& d);

struct BlobMeta {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string producer;  // "npuc <version>" of the writer
  std::string soc;
  std::map<std::string, std::string> options;
  // XXH3-128 of the GRAPH payload, the WEIGHTS payload and, when the graph has NpuPacked
  // constants (2.0), the NWGT payload that holds their bytes.
  Digest model_digest{};
};

// One entry of a loaded blob's section table.
struct SectionEntry {
  uint32_t kind = 0;
  bool required = false;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct LoadedBlob {
  BlobMeta meta;
  std::unique_ptr<Graph> graph;  // constants point into the blob's bytes (zero copy; a file is mapped)
  // NpuPacked constants, in GRAPH order: their tensors are zero-filled placeholders of the right
  // dtype and shape until the compiled-model loader fills them from NWGT (loadCompiledModel does;
  // a graph from loadBlob alone must not be run while this is non-empty).
  std::vector<PackedConstant> packed_constants;
  std::map<std::string, QuantParams> quant;
  // Sections this reader does not decode itself, verbatim (the reserved kinds, and unknown
  // optional kinds from newer minor versions), in file order.
  std::vector<ExtraSection> extra_sections;
  uint64_t file_bytes = 0;                     // the whole blob
  std::map<uint32_t, uint64_t> section_bytes;  // payload size of every section, by kind
  std::vector<SectionEntry> sections;          // the section table, in file order
  // GRAPH and WEIGHTS payloads (views of the blob's bytes), kept only when the blob has a SHPV
  // section (whose variants reference their bytes; compile/shape_variants_codec.h).
  std::map<uint32_t, SharedBytes> base_payloads;
};

// Serializes `graph` (which must verify()) into blob bytes.
std::string writeBlobBytes(const Graph& graph, const BlobWriteOptions& options);
// Writes the blob to `path` (BlobError if the file cannot be written).
void writeBlob(const Graph& graph, const std::string& path, const BlobWriteOptions& options);

// Verifies and decodes blob bytes. With `expected_soc`, a blob for another SoC is refused.
// `origin` names the bytes in messages (a path). Every section's payload is checked against the
// digest SDIG records for it before any of it is decoded.
LoadedBlob readBlobBytes(const std::string& bytes,
                         const std::optional<std::string>& expected_soc = std::nullopt,
                         const std::string& origin = "<memory>");
// The header (magic, version, declared size == file size, section table bounds) is read and checked
// before anything else; only then is the file memory-mapped (read-only, private) and checksummed
// from the mapping, so a huge file that is not a blob costs one 128-byte read.
LoadedBlob loadBlob(const std::string& path, const std::optional<std::string>& expected_soc = std::nullopt);

// Every section of blob bytes this process wrote, in file order (nothing is verified).
std::vector<ExtraSection> writtenSections(const std::string& written_bytes);
// A blob file of exactly `sections` (file order, META/GRAPH/WEIGHTS/SDIG included, payloads as
// given): header, table, alignment and checksum as writeBlobBytes makes them. Used to rebuild a
// shape variant's blob from its SHPV record, which readBlobBytes then verifies like any file.
std::string assembleBlobSections(const std::vector<ExtraSection>& sections);

// Payload size of every section of blob bytes this process wrote (the section table only; nothing is
// verified, so not for files from outside).
std::map<uint32_t, uint64_t> sectionSizes(const std::string& written_bytes);

// The digest META records for `graph`: equal for graphs that encode identically.
Digest modelDigest(const Graph& graph);

}  // namespace npuc::blob
