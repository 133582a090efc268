// Verifies a .npub file before anything in it is used: magic, version, sizes, checksum, section
// table, META, then GRAPH + WEIGHTS (graph_decode.cpp). Checks run in the order that gives the most
// useful message: a future-version blob is reported as such, not as a checksum mismatch.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "blob/checksum.h"
#include "blob/graph_section.h"
#include "blob/graph_shape_check.h"
#include "blob/soc_name.h"
#include "common/error.h"

namespace npuc::blob {

namespace {

struct Section {
  uint32_t kind;
  uint32_t flags;
  uint64_t offset;
  uint64_t size;
};

// The file's bytes in a 64-byte-aligned buffer, so constants can point into it.
struct AlignedBuffer {
  std::shared_ptr<uint8_t> data;
  size_t size = 0;
};

AlignedBuffer allocateAligned(size_t size) {
  const std::align_val_t align{kBlobAlignment};
  uint8_t* p = static_cast<uint8_t*>(::operator new(size ? size : 1, align));
  return {std::shared_ptr<uint8_t>(p, [align](uint8_t* q) { ::operator delete(q, align); }), size};
}

[[noreturn]] void fail(const std::string& origin, const std::string& msg) {
  throw BlobError(fmt::format("cannot load blob '{}': {}", origin, msg));
}

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

void checkHeader(const uint8_t* f, size_t size, const std::string& origin, BlobMeta& meta) {
  if (size < sizeof kMagic || std::memcmp(f + kOffMagic, kMagic, sizeof kMagic) != 0)
    fail(origin, "not an npuc blob (the file does not start with \"NPUB\")");
  if (size < kOffChecksum)
    fail(origin, fmt::format("truncated: {} bytes, less than the {}-byte header", size, kHeaderSize));
  meta.format_major = static_cast<uint16_t>(le(f + kOffMajor, 2));
  meta.format_minor = static_cast<uint16_t>(le(f + kOffMinor, 2));
  if (meta.format_major > kFormatMajor)
    fail(origin, fmt::format("blob format {}.{} is newer than this npuc ({}.x); upgrade npuc",
                             meta.format_major, meta.format_minor, kFormatMajor));
  if (meta.format_major < kFormatMajor)
    fail(origin, fmt::format("blob format {}.{} is older than this npuc supports ({}.x); recompile the model",
                             meta.format_major, meta.format_minor, kFormatMajor));
  if (size < kHeaderSize)
    fail(origin, fmt::format("truncated: {} bytes, less than the {}-byte header", size, kHeaderSize));
  const uint64_t file_size = le(f + kOffFileSize, 8);
  if (file_size != size)
    fail(origin, fmt::format("{}: the header says {} bytes, the file has {}",
                             file_size > size ? "truncated" : "size mismatch", file_size, size));
  const Digest stored = [&] {
    Digest d{};
    std::memcpy(d.data(), f + kOffChecksum, d.size());
    return d;
  }();
  const Digest actual = blobChecksum(f, size);
  if (stored != actual)
    fail(origin, fmt::format("checksum mismatch (stored {}, computed {}): the file is corrupt",
                             digestHex(stored), digestHex(actual)));
  // Past the checksum the bytes are as written; the checks below guard against a buggy or hostile
  // writer, which the checksum cannot.
  if (le(f + kOffHeaderSize, 4) < kHeaderSize) fail(origin, "header size field at offset 32 is too small");
  for (size_t i = kOffReserved; i < kHeaderSize; ++i)
    if (f[i]) fail(origin, fmt::format("reserved header byte at offset {} is not zero", i));
  const char* producer = reinterpret_cast<const char*>(f + kOffProducer);
  const size_t len = strnlen(producer, kProducerSize);
  if (len == kProducerSize) fail(origin, "producer string at offset 48 is not NUL-terminated");
  meta.producer.assign(producer, len);
}

std::vector<Section> readSectionTable(const uint8_t* f, size_t size, const std::string& origin) {
  const uint64_t header_size = le(f + kOffHeaderSize, 4);
  const uint64_t count = le(f + kOffSectionCount, 4);
  const uint64_t table = le(f + kOffSectionTable, 8);
  if (count > kMaxSections) fail(origin, fmt::format("section count {} at offset 36 is implausible", count));
  if (table < header_size || table > size || count * kSectionEntrySize > size - table)
    fail(origin,
         fmt::format("section table at offset {} ({} entries) lies outside the file or overlaps the header",
                     table, count));
  std::vector<Section> sections;
  uint64_t prev_end = table + count * kSectionEntrySize;
  std::set<uint32_t> kinds;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = f + table + i * kSectionEntrySize;
    const std::string where =
        fmt::format("section table entry {} at offset {}", i, table + i * kSectionEntrySize);
    Section s{static_cast<uint32_t>(le(e, 4)), static_cast<uint32_t>(le(e + 4, 4)), le(e + 8, 8),
              le(e + 16, 8)};
    const std::string name = "'" + fourccName(s.kind) + "'";
    if (le(e + 24, 8) != 0) fail(origin, where + ": reserved field is not zero");
    if (s.flags & ~kKnownSectionFlags) fail(origin, where + ": section " + name + " has unknown flags");
    if (!kinds.insert(s.kind).second) fail(origin, where + ": section " + name + " appears twice");
    if (s.offset % kBlobAlignment)
      fail(origin, fmt::format("{}: section {} offset {} is not {}-byte aligned", where, name, s.offset,
                               kBlobAlignment));
    if (s.offset < prev_end || s.offset > size || s.size > size - s.offset)
      fail(origin,
           fmt::format("{}: section {} [{}, +{}) overlaps the previous one or lies outside the {}-byte file",
                       where, name, s.offset, s.size, size));
    prev_end = s.offset + s.size;
    sections.push_back(s);
  }
  return sections;
}

const Section& requireSection(const std::vector<Section>& sections, uint32_t kind,
                              const std::string& origin) {
  for (const Section& s : sections)
    if (s.kind == kind) return s;
  fail(origin, "the required section '" + fourccName(kind) + "' is missing");
}

void readMeta(const uint8_t* f, const Section& s, BlobMeta& meta) {
  ByteReader r(f + s.offset, s.size, s.offset, "META section");
  meta.soc = r.str("SoC name", kMaxMetaString);
  if (meta.soc.empty()) r.fail("empty SoC name");
  const uint32_t n = r.count("build option count", 8);
  for (uint32_t i = 0; i < n; ++i) {
    std::string key = r.str("option key", kMaxMetaString);
    if (!meta.options.empty() && !(meta.options.rbegin()->first < key))
      r.fail("build option '" + key + "' is duplicated or out of order");
    meta.options[key] = r.str("option value", kMaxMetaString);
  }
  for (uint8_t& b : meta.model_digest) b = r.u8("model digest");
  r.expectEnd();
}

bool isDecodedHere(uint32_t kind) {
  return kind == kSectionMeta || kind == kSectionGraph || kind == kSectionWeights;
}

bool isReserved(uint32_t kind) {
  return kind == kSectionTasks || kind == kSectionPipelines || kind == kSectionMemoryPlan ||
         kind == kSectionQuant || kind == kSectionCpuOps;
}

LoadedBlob decodeBlob(const AlignedBuffer& buf, const std::optional<std::string>& expected_soc,
                      const std::string& origin) {
  const uint8_t* f = buf.data.get();
  LoadedBlob out;
  checkHeader(f, buf.size, origin, out.meta);
  const std::vector<Section> sections = readSectionTable(f, buf.size, origin);
  out.file_bytes = buf.size;
  for (const Section& s : sections) {
    out.section_bytes[s.kind] = s.size;
    if (isDecodedHere(s.kind)) continue;
    // The reserved kinds are not decoded here either: a required one means the blob needs a
    // runtime that executes it, so it is refused like any unknown required section — except
    // QUNT, which the quantization layer decodes (quant/graph/quant_plan_codec.h) from
    // extra_sections; callers that run the graph must apply it (Toolkit.load_blob does).
    if ((s.flags & kSectionRequired) && s.kind != kSectionQuant)
      fail(origin,
           fmt::format("section '{}' at offset {} is required but {} this npuc (format {}.{}); upgrade npuc",
                       fourccName(s.kind), s.offset,
                       isReserved(s.kind) ? "not yet supported by" : "unknown to", kFormatMajor,
                       kFormatMinor));
    out.extra_sections.push_back({s.kind, (s.flags & kSectionRequired) != 0,
                                  std::string(reinterpret_cast<const char*>(f + s.offset), s.size)});
  }
  const Section& meta = requireSection(sections, kSectionMeta, origin);
  const Section& graph = requireSection(sections, kSectionGraph, origin);
  const Section& weights = requireSection(sections, kSectionWeights, origin);
  try {
    readMeta(f, meta, out.meta);
    if (expected_soc) {
      const std::string want = canonicalSocName(*expected_soc);
      if (want != out.meta.soc)
        fail(origin, "the blob was compiled for SoC '" + out.meta.soc + "', not for '" + want + "'");
    }
    DecodedGraph g = decodeGraph(ByteReader(f + graph.offset, graph.size, graph.offset, "GRAPH section"),
                                 f + weights.offset, weights.size, weights.offset, buf.data);
    checkRecordedShapes(*g.graph);  // the runtimes size buffers from the recorded shapes
    out.graph = std::move(g.graph);
    out.quant = std::move(g.quant);
  } catch (const BlobError& e) {
    const std::string msg = e.what();
    if (msg.rfind("cannot load blob", 0) == 0) throw;
    fail(origin, msg);
  }
  return out;
}

}  // namespace

std::map<uint32_t, uint64_t> sectionSizes(const std::string& written_bytes) {
  std::map<uint32_t, uint64_t> out;
  for (const Section& s : readSectionTable(reinterpret_cast<const uint8_t*>(written_bytes.data()),
                                           written_bytes.size(), "<written blob>"))
    out[s.kind] = s.size;
  return out;
}

LoadedBlob readBlobBytes(const std::string& bytes, const std::optional<std::string>& expected_soc,
                         const std::string& origin) {
  AlignedBuffer buf = allocateAligned(bytes.size());
  std::memcpy(buf.data.get(), bytes.data(), bytes.size());
  return decodeBlob(buf, expected_soc, origin);
}

LoadedBlob loadBlob(const std::string& path, const std::optional<std::string>& expected_soc) {
  // A directory opens as an ifstream on Linux and reports a size near INT64_MAX, which the buffer
  // below would try to allocate: only a regular file (or a link to one) is read.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw BlobError("cannot load blob '" + path + "': not a regular file (a directory?)");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw BlobError("cannot open blob file '" + path + "'");
  const std::streamoff size = in.tellg();
  if (size < 0) throw BlobError("cannot read blob file '" + path + "'");
  AlignedBuffer buf = allocateAligned(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(buf.data.get()), size))
    throw BlobError("cannot read blob file '" + path + "'");
  return decodeBlob(buf, expected_soc, path);
}

}  // namespace npuc::blob
