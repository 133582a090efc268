// Assembles the .npub file: header, section table, META / GRAPH / WEIGHTS and any extra sections.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "blob/checksum.h"
#include "blob/graph_section.h"
#include "blob/section_digests.h"
#include "blob/soc_name.h"
#include "common/atomic_file.h"
#include "common/error.h"

namespace npuc::blob {

namespace {

struct PendingSection {
  uint32_t kind;
  bool required;
  SharedBytes bytes;  // the caller's sections are shared, not copied
};

std::string encodeMeta(const std::string& soc, const std::map<std::string, std::string>& options,
                       const Digest& digest) {
  ByteWriter w;
  w.str(soc, kMaxNameBytes, "SoC name");
  w.count(options.size(), "build options");
  for (const auto& [k, v] : options) {
    w.str(k, kMaxNameBytes, "build option key");
    w.str(v, kMaxTextBytes, "build option value");
  }
  w.raw(digest.data(), digest.size());
  return w.take();
}

// GRAPH payload followed by WEIGHTS payload, hashed as one byte string; then NWGT when it holds
// some of the graph's constants (`packed`), so the digest still covers every weight.
Digest digestOf(const EncodedGraph& enc, const SharedBytes* packed = nullptr) {
  std::string all;
  all.reserve(enc.graph.size() + enc.weights.size() + (packed ? packed->size() : 0));
  all.append(enc.graph).append(enc.weights);
  if (packed) all.append(packed->view());
  return xxh128(all.data(), all.size());
}

// The NWGT section that holds the NpuPacked constants: present, required (a reader without it
// could not rebuild the graph), and holding every extent. Null when nothing is packed.
const SharedBytes* checkPackedConstants(const BlobWriteOptions& options) {
  if (options.packed_constants.empty()) return nullptr;
  const ExtraSection* nwgt = nullptr;
  for (const ExtraSection& s : options.extra_sections)
    if (s.kind == kSectionNpuWeights) nwgt = &s;
  if (!nwgt || !nwgt->required)
    throw BlobError("cannot write blob: NPU-packed constants need a required NWGT section");
  for (const auto& [name, p] : options.packed_constants) {
    if (p.value != name || p.offset % kBlobAlignment || p.offset > nwgt->bytes.size() ||
        p.size > nwgt->bytes.size() - p.offset)
      throw BlobError(
          fmt::format("cannot write blob: NPU-packed constant '{}' at NWGT [{}, +{}) does not fit "
                      "the {}-byte NWGT section",
                      name, p.offset, p.size, nwgt->bytes.size()));
  }
  return &nwgt->bytes;
}

std::string producerString() {
  return std::string("npuc ") + NPUC_VERSION;
}

void checkExtraSections(const std::vector<ExtraSection>& extra) {
  std::set<uint32_t> kinds{kSectionMeta, kSectionGraph, kSectionWeights, kSectionDigests};
  for (const ExtraSection& s : extra)
    if (!kinds.insert(s.kind).second)
      throw BlobError("cannot write blob: section kind '" + fourccName(s.kind) +
                      "' is given twice or is built in");
}

// The SDIG section over `sections` (every other section, in table order).
PendingSection digestSection(const std::vector<PendingSection>& sections) {
  std::vector<SectionDigest> digests;
  for (const PendingSection& s : sections)
    digests.push_back(
        {s.kind, sectionDigest(reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size())});
  return {kSectionDigests, false, encodeSectionDigests(digests)};
}

// Header + table + sections, each section at a multiple of kBlobAlignment; checksum last.
std::string assemble(const std::vector<PendingSection>& sections) {
  if (sections.size() > kMaxSections)
    throw BlobError(fmt::format("cannot write blob: {} sections, more than the .npub limit of {}",
                                sections.size(), kMaxSections));
  const uint64_t table_end = kHeaderSize + sections.size() * kSectionEntrySize;
  std::vector<uint64_t> offsets;
  uint64_t pos = (table_end + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  for (const PendingSection& s : sections) {
    offsets.push_back(pos);
    pos = (pos + s.bytes.size() + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  }
  const uint64_t file_size = offsets.empty() ? table_end : offsets.back() + sections.back().bytes.size();

  ByteWriter w;
  w.raw(kMagic, sizeof kMagic);
  w.u16(kFormatMajor);
  w.u16(kFormatMinor);
  w.raw(std::string(kChecksumSize, '\0').data(), kChecksumSize);  // filled in below
  w.u64(file_size);
  w.u32(kHeaderSize);
  w.u32(static_cast<uint32_t>(sections.size()));
  w.u64(kHeaderSize);  // the section table follows the header
  std::string producer = producerString();
  producer.resize(kProducerSize, '\0');
  producer.back() = '\0';  // always NUL-terminated
  w.raw(producer.data(), producer.size());
  w.raw(std::string(kHeaderSize - kOffReserved, '\0').data(), kHeaderSize - kOffReserved);
  for (size_t i = 0; i < sections.size(); ++i) {
    w.u32(sections[i].kind);
    w.u32(sections[i].required ? kSectionRequired : 0);
    w.u64(offsets[i]);
    w.u64(sections[i].bytes.size());
    w.u64(0);
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    w.padTo(kBlobAlignment);
    w.raw(sections[i].bytes.data(), sections[i].bytes.size());
  }
  std::string file = w.take();
  const Digest sum = blobChecksum(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  std::copy(sum.begin(), sum.end(), file.begin() + kOffChecksum);
  return file;
}

}  // namespace

std::string fourccName(uint32_t kind) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const unsigned char c = static_cast<unsigned char>(kind >> (8 * i));
    if (c >= 0x20 && c < 0x7F) {
      s += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    }
  }
  return s;
}

std::string digestHex(const Digest& d) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

Digest modelDigest(const Graph& graph) {
  return digestOf(encodeGraph(graph, {}));
}

std::string writeBlobBytes(const Graph& graph, const BlobWriteOptions& options) {
  const std::string soc = canonicalSocName(options.soc);
  checkExtraSections(options.extra_sections);
  try {
    graph.verify();
  } catch (const GraphError& e) {
    throw BlobError(std::string("cannot write blob: ") + e.what());
  }
  const SharedBytes* packed = checkPackedConstants(options);
  EncodedGraph enc = encodeGraph(graph, options.quant, options.packed_constants);
  std::vector<PendingSection> sections;
  sections.push_back({kSectionMeta, true, encodeMeta(soc, options.options, digestOf(enc, packed))});
  sections.push_back({kSectionGraph, true, std::move(enc.graph)});
  sections.push_back({kSectionWeights, true, std::move(enc.weights)});
  for (const ExtraSection& s : options.extra_sections) sections.push_back({s.kind, s.required, s.bytes});
  sections.push_back(digestSection(sections));
  return assemble(sections);
}

std::string assembleBlobSections(const std::vector<ExtraSection>& sections) {
  std::vector<PendingSection> pending;
  for (const ExtraSection& s : sections) pending.push_back({s.kind, s.required, s.bytes});
  return assemble(pending);
}

void writeBlob(const Graph& graph, const std::string& path, const BlobWriteOptions& options) {
  const std::string bytes = writeBlobBytes(graph, options);
  const std::string failure = writeFileAtomically(path, bytes);
  if (!failure.empty()) throw BlobError("cannot write blob file '" + path + "': " + failure);
}

}  // namespace npuc::blob
