#include "blob/section_digests.h"

#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "blob/checksum.h"

namespace npuc::blob {

Digest sectionDigest(const uint8_t* payload, size_t size) {
  return xxh128(payload, size);
}

std::string encodeSectionDigests(const std::vector<SectionDigest>& digests) {
  ByteWriter w;
  w.count(digests.size(), "section digests");
  for (const SectionDigest& d : digests) {
    w.u32(d.kind);
    w.raw(d.digest.data(), d.digest.size());
  }
  return w.take();
}

std::vector<SectionDigest> decodeSectionDigests(const uint8_t* payload, size_t size, uint64_t base) {
  ByteReader r(payload, size, base, "SDIG section");
  const uint32_t n = r.count("section digest count", 4 + sizeof(Digest));
  std::vector<SectionDigest> out(n);
  for (SectionDigest& d : out) {
    d.kind = r.u32("section kind");
    for (uint8_t& b : d.digest) b = r.u8("section digest");
  }
  r.expectEnd();
  return out;
}

}  // namespace npuc::blob
