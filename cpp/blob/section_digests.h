// The SDIG section (format 1.2): the XXH3-128 of every other section's payload, so a section taken
// from another blob (spliced in, then the header checksum recomputed, as a buggy or hostile writer
// would) is refused naming that section. The header checksum covers SDIG itself, so one edit
// cannot both change a section and its recorded digest without the checksum noticing; only a
// writer that recomputes both can, and the decoders' structural checks still guard against that.
//
// Payload: u32 n, then n x (u32 kind, u8[16] digest), one entry per other section in table order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "blob/blob.h"

namespace npuc::blob {

struct SectionDigest {
  uint32_t kind = 0;
  Digest digest{};
};

// Digest of one section's payload.
Digest sectionDigest(const uint8_t* payload, size_t size);

std::string encodeSectionDigests(const std::vector<SectionDigest>& digests);
// Parses an SDIG payload (BlobError "corrupt blob: SDIG section at offset N: ..." when malformed);
// `base` is the payload's file offset.
std::vector<SectionDigest> decodeSectionDigests(const uint8_t* payload, size_t size, uint64_t base);

}  // namespace npuc::blob
