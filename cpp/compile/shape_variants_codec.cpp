#include "compile/shape_variants_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/blob_limits.h"
#include "blob/byte_io.h"
#include "common/error.h"

namespace npuc {

namespace {

constexpr uint8_t kChunkLiteral = 0;
constexpr uint8_t kChunkReference = 1;
// Matching granularity: sections place every weight at a multiple of kBlobAlignment, so an equal
// weight starts at an aligned offset in both payloads whatever shifted around it.
constexpr size_t kBlock = blob::kBlobAlignment;
// Candidates tried per block digest: runs of equal blocks (zero padding) would otherwise make the
// search quadratic; the first offsets are enough to find a weight that exists once.
constexpr size_t kMaxCandidates = 16;

struct Chunk {
  bool reference = false;
  uint64_t offset = 0;  // reference: into the base payload; literal: into the variant payload
  uint64_t size = 0;
};

size_t commonPrefix(std::string_view a, size_t ia, std::string_view b, size_t ib) {
  const size_t n = std::min(a.size() - ia, b.size() - ib);
  size_t k = 0;
  while (k < n && a[ia + k] == b[ib + k]) ++k;
  return k;
}

// Greedy aligned-block matching of `payload` against `base`: at each aligned offset the longest
// equal run starting at an aligned base offset with the same first block becomes a reference.
std::vector<Chunk> chunksAgainst(std::string_view payload, const std::string* base) {
  std::vector<Chunk> out;
  auto literal = [&](uint64_t from, uint64_t to) {
    if (to > from) out.push_back({false, from, to - from});
  };
  if (!base || base->size() < kBlock || payload.size() < kBlock) {
    literal(0, payload.size());
    return out;
  }
  std::unordered_map<std::string_view, std::vector<uint64_t>> index;
  for (size_t c = 0; c + kBlock <= base->size(); c += kBlock) {
    std::vector<uint64_t>& v = index[std::string_view(base->data() + c, kBlock)];
    if (v.size() < kMaxCandidates) v.push_back(c);
  }
  size_t lit = 0, p = 0;
  while (p + kBlock <= payload.size()) {
    size_t best = 0, best_at = 0;
    auto it = index.find(std::string_view(payload.data() + p, kBlock));
    if (it != index.end())
      for (uint64_t c : it->second) {
        const size_t len = commonPrefix(payload, p, *base, c);
        if (len > best) best = len, best_at = c;
      }
    if (best < kBlock) {
      p += kBlock;
      continue;
    }
    literal(lit, p);
    out.push_back({true, best_at, best});
    p += best;
    lit = p;
    p = (p + kBlock - 1) / kBlock * kBlock;
  }
  literal(lit, payload.size());
  return out;
}

}  // namespace

ShapeVariantsEncoding encodeShapeVariants(const std::map<uint32_t, std::string>& base,
                                          const std::vector<std::vector<Shape>>& shapes,
                                          const std::vector<std::string>& variant_blobs) {
  if (shapes.size() != variant_blobs.size())
    throw BlobError("cannot write blob: SHPV needs one shape list per variant blob");
  ShapeVariantsEncoding enc;
  blob::ByteWriter w;
  w.u32(kShapeVariantsVersion);
  w.count(variant_blobs.size(), "shape variants");
  for (size_t v = 0; v < variant_blobs.size(); ++v) {
    w.count(shapes[v].size(), "shape variant inputs");
    for (const Shape& s : shapes[v]) {
      w.count(s.size(), "shape variant input rank");
      for (int64_t d : s) w.i64(d);
    }
    const std::vector<blob::ExtraSection> sections = blob::writtenSections(variant_blobs[v]);
    w.count(sections.size(), "shape variant sections");
    std::vector<VariantSectionStats>& stats = enc.sections.emplace_back();
    for (const blob::ExtraSection& s : sections) {
      if (s.kind == blob::kSectionShapeVariants)
        throw BlobError("cannot write blob: a shape variant has shape variants of its own");
      auto b = base.find(s.kind);
      const std::vector<Chunk> chunks = chunksAgainst(s.bytes, b == base.end() ? nullptr : &b->second);
      w.u32(s.kind);
      w.u8(s.required ? 1 : 0);
      w.u64(s.bytes.size());
      w.count(chunks.size(), "shape variant chunks");
      VariantSectionStats st{s.kind, s.bytes.size(), 0};
      for (const Chunk& c : chunks) {
        w.u8(c.reference ? kChunkReference : kChunkLiteral);
        w.u64(c.size);
        if (c.reference) {
          w.u64(c.offset);
          st.referenced += c.size;
        } else {
          w.raw(s.bytes.data() + c.offset, c.size);
        }
      }
      stats.push_back(st);
    }
  }
  enc.bytes = w.take();
  return enc;
}

std::vector<ShapeVariantRecord> decodeShapeVariants(std::string_view bytes,
                                                    const std::map<uint32_t, std::string_view>& base) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "SHPV section");
  const uint32_t version = r.u32("SHPV version");
  if (version != kShapeVariantsVersion)
    r.fail(fmt::format("SHPV version {} is not one this npuc reads ({})", version, kShapeVariantsVersion));
  const uint32_t count = r.count("shape variants", 8);
  if (count == 0) r.fail("no shape variants (a blob without them has no SHPV section)");
  uint64_t baseBytes = 0;
  for (const auto& [kind, payload] : base) baseBytes += payload.size();
  std::vector<ShapeVariantRecord> out;
  for (uint32_t v = 0; v < count; ++v) {
    ShapeVariantRecord rec;
    const uint32_t inputs = r.count("shape variant inputs", 4);
    for (uint32_t i = 0; i < inputs; ++i) {
      const uint32_t rank = r.count("shape variant input rank", 8);
      if (rank > blob::kMaxRank) r.fail(fmt::format("variant {} input {} has rank {}", v + 1, i, rank));
      Shape s;
      for (uint32_t k = 0; k < rank; ++k) s.push_back(r.i64("dimension"));
      rec.input_shapes.push_back(std::move(s));
    }
    const uint32_t n_sections = r.count("shape variant sections", 17);
    if (n_sections > blob::kMaxSections) r.fail(fmt::format("variant {} has {} sections", v + 1, n_sections));
    std::vector<blob::ExtraSection> sections;
    for (uint32_t k = 0; k < n_sections; ++k) {
      blob::ExtraSection s;
      std::string payload;  // rebuilt from its chunks (a variant's blob is assembled, not mapped)
      s.kind = r.u32("section kind");
      const uint8_t required = r.u8("required flag");
      if (required > 1) r.fail(fmt::format("variant {} section flag {} is not 0 or 1", v + 1, required));
      s.required = required != 0;
      const uint64_t size = r.u64("section size");
      // References may repeat base bytes, but a variant is the same model at other shapes: a
      // section far larger than everything it could draw from is corrupt, not a reason to allocate.
      if (size > bytes.size() + 16 * baseBytes)
        r.fail(fmt::format("variant {} section '{}' claims {} bytes", v + 1, blob::fourccName(s.kind), size));
      const uint32_t chunks = r.count("chunks", 9);
      auto b = base.find(s.kind);
      for (uint32_t c = 0; c < chunks; ++c) {
        const uint8_t tag = r.u8("chunk tag");
        const uint64_t n = r.u64("chunk size");
        if (n > size - payload.size())
          r.fail(fmt::format("variant {} section '{}': chunks exceed its {} bytes", v + 1,
                             blob::fourccName(s.kind), size));
        if (tag == kChunkLiteral) {
          if (n > r.remaining()) r.fail("literal chunk runs past the section");
          payload.append(reinterpret_cast<const char*>(r.bytes(n, "literal chunk")), n);
        } else if (tag == kChunkReference) {
          const uint64_t off = r.u64("reference offset");
          if (b == base.end())
            r.fail(
                fmt::format("variant {} section '{}' references set 0's section of that kind, which the "
                            "blob lacks",
                            v + 1, blob::fourccName(s.kind)));
          if (off > b->second.size() || n > b->second.size() - off)
            r.fail(
                fmt::format("variant {} section '{}': reference [{}, +{}) lies outside set 0's {}-byte "
                            "section",
                            v + 1, blob::fourccName(s.kind), off, n, b->second.size()));
          payload.append(b->second.substr(off, n));
        } else {
          r.fail(fmt::format("variant {} chunk tag {} is not 0 (literal) or 1 (reference)", v + 1, tag));
        }
      }
      if (payload.size() != size)
        r.fail(fmt::format("variant {} section '{}': chunks give {} bytes, the record says {}", v + 1,
                           blob::fourccName(s.kind), payload.size(), size));
      s.bytes = std::move(payload);
      sections.push_back(std::move(s));
    }
    rec.blob = blob::assembleBlobSections(sections);
    out.push_back(std::move(rec));
  }
  r.expectEnd();
  return out;
}

}  // namespace npuc
