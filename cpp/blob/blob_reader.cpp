// Verifies a .npub file before anything in it is used: magic, version, sizes and section table
// bounds (from the 128-byte header alone, before the rest of a file is touched), checksum, section
// table, section digests (SDIG), META, then GRAPH + WEIGHTS (graph_decode.cpp). Checks run in the
// order that gives the most useful message: a future-version blob is reported as such, not as a
// checksum mismatch.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "blob/checksum.h"
#include "blob/graph_section.h"
#include "blob/graph_shape_check.h"
#include "blob/section_digests.h"
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

// The whole blob, 64-byte aligned (a heap copy or a file mapping), so constants and sections can
// point into it; `owner` keeps it alive as long as any of them does.
struct BlobBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
  // Bytes [offset, offset + size) as a view sharing `owner` (no copy).
  SharedBytes slice(uint64_t offset, uint64_t len) const {
    return SharedBytes::view(data + offset, len, owner);
  }
};

BlobBytes copyAligned(const std::string& bytes) {
  const std::align_val_t align{kBlobAlignment};
  uint8_t* p = static_cast<uint8_t*>(::operator new(bytes.size() ? bytes.size() : 1, align));
  std::memcpy(p, bytes.data(), bytes.size());
  return {p, bytes.size(), std::shared_ptr<void>(p, [align](void* q) { ::operator delete(q, align); })};
}

[[noreturn]] void fail(const std::string& origin, const std::string& msg) {
  throw BlobError(fmt::format("cannot load blob '{}': {}", origin, msg));
}

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// What the header alone can tell, before the rest of the file is read: `head` holds the first
// min(size, kHeaderSize) bytes of a `size`-byte file.
void checkHeaderFields(const uint8_t* head, size_t head_len, uint64_t size, const std::string& origin,
                       BlobMeta& meta) {
  if (head_len < sizeof kMagic || std::memcmp(head + kOffMagic, kMagic, sizeof kMagic) != 0)
    fail(origin, "not an npuc blob (the file does not start with \"NPUB\")");
  if (head_len < kOffChecksum)
    fail(origin, fmt::format("truncated: {} bytes, less than the {}-byte header", size, kHeaderSize));
  meta.format_major = static_cast<uint16_t>(le(head + kOffMajor, 2));
  meta.format_minor = static_cast<uint16_t>(le(head + kOffMinor, 2));
  if (meta.format_major > kFormatMajor)
    fail(origin, fmt::format("blob format {}.{} is newer than this npuc ({}.x); upgrade npuc",
                             meta.format_major, meta.format_minor, kFormatMajor));
  if (meta.format_major < kOldestReadableMajor)
    fail(origin,
         fmt::format("blob format {}.{} is older than this npuc supports ({}.{} to {}.x); recompile the "
                     "model",
                     meta.format_major, meta.format_minor, kOldestReadableMajor, kOldestReadableMinor,
                     kFormatMajor));
  if (meta.format_major == kOldestReadableMajor && meta.format_minor < kOldestReadableMinor)
    fail(origin,
         fmt::format("blob format {}.{} has no section digests (added in {}.{}), so this npuc cannot "
                     "verify its sections; export the model again with this npuc",
                     meta.format_major, meta.format_minor, kOldestReadableMajor, kOldestReadableMinor));
  if (head_len < kHeaderSize)
    fail(origin, fmt::format("truncated: {} bytes, less than the {}-byte header", size, kHeaderSize));
  const uint64_t file_size = le(head + kOffFileSize, 8);
  if (file_size != size)
    fail(origin, fmt::format("{}: the header says {} bytes, the file has {}",
                             file_size > size ? "truncated" : "size mismatch", file_size, size));
  const uint64_t header_size = le(head + kOffHeaderSize, 4);
  if (header_size < kHeaderSize) fail(origin, "header size field at offset 32 is too small");
  const uint64_t count = le(head + kOffSectionCount, 4);
  const uint64_t table = le(head + kOffSectionTable, 8);
  if (count > kMaxSections) fail(origin, fmt::format("section count {} at offset 36 is implausible", count));
  if (table < header_size || table > size || count * kSectionEntrySize > size - table)
    fail(origin,
         fmt::format("section table at offset {} ({} entries) lies outside the file or overlaps the header",
                     table, count));
}

// The rest of the header, once the checksum has vouched for the whole file.
void checkSealedHeader(const uint8_t* f, size_t size, const std::string& origin, BlobMeta& meta) {
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
  for (size_t i = kOffReserved; i < kHeaderSize; ++i)
    if (f[i]) fail(origin, fmt::format("reserved header byte at offset {} is not zero", i));
  const char* producer = reinterpret_cast<const char*>(f + kOffProducer);
  const size_t len = strnlen(producer, kProducerSize);
  if (len == kProducerSize) fail(origin, "producer string at offset 48 is not NUL-terminated");
  meta.producer.assign(producer, len);
}

// The table's own bounds were checked with the header (checkHeaderFields).
std::vector<Section> readSectionTable(const uint8_t* f, size_t size, const std::string& origin) {
  const uint64_t count = le(f + kOffSectionCount, 4);
  const uint64_t table = le(f + kOffSectionTable, 8);
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

// Every section's payload against the digest SDIG records for it: a section spliced in from
// another blob (with the header checksum recomputed) is refused, named, before it is decoded.
void verifySectionDigests(const uint8_t* f, const std::vector<Section>& sections, const std::string& origin) {
  const Section* sdig = nullptr;
  for (const Section& s : sections)
    if (s.kind == kSectionDigests) sdig = &s;
  if (!sdig)
    fail(origin, fmt::format("the section digest table '{}' is missing (every blob of format {}.{} or later "
                             "has one)",
                             fourccName(kSectionDigests), kOldestReadableMajor, kOldestReadableMinor));
  std::vector<SectionDigest> recorded;
  try {
    recorded = decodeSectionDigests(f + sdig->offset, sdig->size, sdig->offset);
  } catch (const BlobError& e) {
    fail(origin, e.what());
  }
  if (recorded.size() + 1 != sections.size())
    fail(origin, fmt::format("the SDIG section records {} section digests, the table has {} other sections",
                             recorded.size(), sections.size() - 1));
  size_t k = 0;
  for (const Section& s : sections) {
    if (&s == sdig) continue;
    const SectionDigest& want = recorded[k++];
    if (want.kind != s.kind)
      fail(origin, fmt::format("the SDIG section records '{}' where the table has section '{}'",
                               fourccName(want.kind), fourccName(s.kind)));
    const Digest got = sectionDigest(f + s.offset, s.size);
    if (got != want.digest)
      fail(
          origin,
          fmt::format("section '{}' at offset {} does not match the digest SDIG records for it (recorded {}, "
                      "computed {}): it was altered or spliced in from another blob",
                      fourccName(s.kind), s.offset, digestHex(want.digest), digestHex(got)));
  }
}

void readMeta(const uint8_t* f, const Section& s, BlobMeta& meta) {
  ByteReader r(f + s.offset, s.size, s.offset, "META section");
  meta.soc = r.str("SoC name", kMaxNameBytes);
  if (meta.soc.empty()) r.fail("empty SoC name");
  const uint32_t n = r.count("build option count", 8);
  for (uint32_t i = 0; i < n; ++i) {
    std::string key = r.str("option key", kMaxNameBytes);
    if (!meta.options.empty() && !(meta.options.rbegin()->first < key))
      r.fail("build option '" + key + "' is duplicated or out of order");
    meta.options[key] = r.str("option value", kMaxTextBytes);
  }
  for (uint8_t& b : meta.model_digest) b = r.u8("model digest");
  r.expectEnd();
}

bool isDecodedHere(uint32_t kind) {
  return kind == kSectionMeta || kind == kSectionGraph || kind == kSectionWeights || kind == kSectionDigests;
}

bool isReserved(uint32_t kind) {
  return kind == kSectionTasks || kind == kSectionPipelines || kind == kSectionMemoryPlan ||
         kind == kSectionQuant || kind == kSectionCpuOps || kind == kSectionNpuWeights;
}

// Kinds the compiled-model loader (compile/compiled_model_io.h) decodes from extra_sections, so a
// required one is no reason to refuse here: QUNT (an INT8 build's plan) and, since 2.0, the program
// sections that hold NpuPacked constants.
bool isDecodedByCompileLayer(uint32_t kind) {
  return kind == kSectionQuant || kind == kSectionTasks || kind == kSectionPipelines ||
         kind == kSectionCpuOps || kind == kSectionNpuWeights || kind == kSectionShapeVariants;
}

// Everything after the header fields (checkHeaderFields, already run on the first bytes).
LoadedBlob decodeBlob(const BlobBytes& buf, BlobMeta meta, const std::optional<std::string>& expected_soc,
                      const std::string& origin) {
  const uint8_t* f = buf.data;
  LoadedBlob out;
  out.meta = std::move(meta);
  checkSealedHeader(f, buf.size, origin, out.meta);
  const std::vector<Section> sections = readSectionTable(f, buf.size, origin);
  verifySectionDigests(f, sections, origin);
  out.file_bytes = buf.size;
  for (const Section& s : sections) {
    out.section_bytes[s.kind] = s.size;
    out.sections.push_back({s.kind, (s.flags & kSectionRequired) != 0, s.offset, s.size});
    if (isDecodedHere(s.kind)) continue;
    // The reserved kinds are not decoded here either: a required one means the blob needs a
    // runtime that executes it, so it is refused like any unknown required section — except
    // those the compiled-model loader decodes from extra_sections (QUNT; TASK/PIPE/CPUO/NWGT when
    // the graph's weights live in NWGT); callers that run the graph must apply them
    // (loadCompiledModel, which Toolkit.load_blob uses, does).
    if ((s.flags & kSectionRequired) && !isDecodedByCompileLayer(s.kind))
      fail(origin,
           fmt::format("section '{}' at offset {} is required but {} this npuc (format {}.{}); upgrade npuc",
                       fourccName(s.kind), s.offset,
                       isReserved(s.kind) ? "not yet supported by" : "unknown to", kFormatMajor,
                       kFormatMinor));
    out.extra_sections.push_back({s.kind, (s.flags & kSectionRequired) != 0, buf.slice(s.offset, s.size)});
  }
  const Section& meta_section = requireSection(sections, kSectionMeta, origin);
  const Section& graph = requireSection(sections, kSectionGraph, origin);
  const Section& weights = requireSection(sections, kSectionWeights, origin);
  // Shape variants (SHPV) store their bytes as references into these sections too.
  if (out.section_bytes.count(kSectionShapeVariants))
    for (const Section* s : {&graph, &weights}) out.base_payloads[s->kind] = buf.slice(s->offset, s->size);
  try {
    readMeta(f, meta_section, out.meta);
    if (expected_soc) {
      const std::string want = canonicalSocName(*expected_soc);
      if (want != out.meta.soc)
        fail(origin, "the blob was compiled for SoC '" + out.meta.soc + "', not for '" + want + "'");
    }
    GraphSources src;
    src.weights = f + weights.offset;
    src.weights_size = weights.size;
    src.weights_offset = weights.offset;
    src.owner = buf.owner;
    src.packed_allowed = out.meta.format_major >= kPackedConstantsMajor;
    for (const Section& s : sections)
      if (s.kind == kSectionNpuWeights) {
        src.packed_size = s.size;
        src.has_packed = true;
      }
    DecodedGraph g =
        decodeGraph(ByteReader(f + graph.offset, graph.size, graph.offset, "GRAPH section"), src);
    checkRecordedShapes(*g.graph);  // the runtimes size buffers from the recorded shapes
    out.graph = std::move(g.graph);
    out.quant = std::move(g.quant);
    out.packed_constants = std::move(g.packed_constants);
  } catch (const BlobError& e) {
    const std::string msg = e.what();
    if (msg.rfind("cannot load blob", 0) == 0) throw;
    fail(origin, msg);
  }
  return out;
}

// Closes a file descriptor on every path out of loadBlob.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

std::vector<ExtraSection> writtenSections(const std::string& written_bytes) {
  std::vector<ExtraSection> out;
  const auto* f = reinterpret_cast<const uint8_t*>(written_bytes.data());
  // Copies (owned bytes): `written_bytes` is the caller's and may go before the sections do.
  for (const Section& s : readSectionTable(f, written_bytes.size(), "<written blob>"))
    out.push_back({s.kind, (s.flags & kSectionRequired) != 0,
                   std::string(reinterpret_cast<const char*>(f + s.offset), s.size)});
  return out;
}

std::map<uint32_t, uint64_t> sectionSizes(const std::string& written_bytes) {
  std::map<uint32_t, uint64_t> out;
  for (const Section& s : readSectionTable(reinterpret_cast<const uint8_t*>(written_bytes.data()),
                                           written_bytes.size(), "<written blob>"))
    out[s.kind] = s.size;
  return out;
}

LoadedBlob readBlobBytes(const std::string& bytes, const std::optional<std::string>& expected_soc,
                         const std::string& origin) {
  BlobMeta meta;
  checkHeaderFields(reinterpret_cast<const uint8_t*>(bytes.data()), std::min(bytes.size(), kHeaderSize),
                    bytes.size(), origin, meta);
  return decodeBlob(copyAligned(bytes), std::move(meta), expected_soc, origin);
}

LoadedBlob loadBlob(const std::string& path, const std::optional<std::string>& expected_soc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw BlobError(fmt::format("cannot open blob file '{}': {}", path, std::strerror(errno)));
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw BlobError(fmt::format("cannot read blob file '{}': {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw BlobError(fmt::format("cannot load blob '{}': not a regular file", path));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  // The header first: a file that is not a blob, or whose header disagrees with its size, is
  // refused after reading 128 bytes, whatever its size.
  uint8_t head[kHeaderSize];
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size, kHeaderSize));
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd, head + got, want - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw BlobError(fmt::format("cannot read blob file '{}': {}", path,
                                  n < 0 ? std::strerror(errno) : "unexpected end of file"));
    got += static_cast<size_t>(n);
  }
  BlobMeta meta;
  checkHeaderFields(head, want, size, path, meta);
  // Then the file, mapped read-only and private: pages are read as the checksum and the decoders
  // touch them, and the graph's constants point into the mapping (page-aligned, so 64-aligned).
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED)
    throw ResourceError(
        fmt::format("cannot map blob file '{}' ({} bytes): {}", path, size, std::strerror(errno)));
  std::shared_ptr<void> owner(map, [size](void* p) { ::munmap(p, size); });
  return decodeBlob({static_cast<const uint8_t*>(map), size, std::move(owner)}, std::move(meta), expected_soc,
                    path);
}

}  // namespace npuc::blob
