// The SHPV codec (compile/shape_variants_codec.h): a variant's sections round-trip through chunks
// that reference set 0's equal bytes (weights stored once), deterministically, and a record whose
// reference falls outside set 0's section is a BlobError naming the variant and the section.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/shape_variants_codec.h"

namespace npuc {
namespace {

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

struct Fixture {
  std::map<uint32_t, std::string> base;
  std::string variant;
  std::string variant_weights;
};

// Set 0's WGHT and NWGT, and a variant whose NWGT is equal and whose WGHT has one 64-byte weight
// inserted before the shared ones and one byte changed in the last weight.
Fixture fixture() {
  Fixture f;
  f.base[blob::kSectionGraph] = pattern(300, 1);
  f.base[blob::kSectionWeights] = pattern(4096, 2);
  f.base[blob::kSectionNpuWeights] = pattern(8192, 3);
  f.variant_weights = pattern(64, 9) + f.base[blob::kSectionWeights];
  f.variant_weights[4096 + 64 - 10] ^= 0x5A;
  f.variant = blob::assembleBlobSections({{blob::kSectionMeta, true, pattern(40, 4)},
                                          {blob::kSectionGraph, true, pattern(310, 5)},
                                          {blob::kSectionWeights, true, f.variant_weights},
                                          {blob::kSectionNpuWeights, true, f.base[blob::kSectionNpuWeights]},
                                          {blob::kSectionDigests, false, pattern(50, 6)}});
  return f;
}

std::map<uint32_t, std::string_view> pointers(const std::map<uint32_t, std::string>& base) {
  std::map<uint32_t, std::string_view> out;
  for (const auto& [kind, bytes] : base) out[kind] = bytes;
  return out;
}

TEST(ShapeVariantsCodec, EqualBytesAreReferencesAndTheVariantRoundTrips) {
  const Fixture f = fixture();
  const ShapeVariantsEncoding enc = encodeShapeVariants(f.base, {{{1, 3, 16, 16}}}, {f.variant});
  ASSERT_EQ(enc.sections.size(), 1u);
  for (const VariantSectionStats& s : enc.sections[0]) {
    if (s.kind == blob::kSectionNpuWeights) EXPECT_EQ(s.referenced, s.bytes);         // stored once
    if (s.kind == blob::kSectionWeights) EXPECT_GE(s.referenced, s.bytes - 64 - 64);  // all but 2 blocks
  }
  EXPECT_LT(enc.bytes.size(), 64u + 64u + 64u + 310u + 40u + 50u + 400u);  // literals plus records
  EXPECT_EQ(encodeShapeVariants(f.base, {{{1, 3, 16, 16}}}, {f.variant}).bytes, enc.bytes);  // deterministic
  const std::vector<ShapeVariantRecord> back = decodeShapeVariants(enc.bytes, pointers(f.base));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].blob, f.variant);
  EXPECT_EQ(back[0].input_shapes, (std::vector<Shape>{{1, 3, 16, 16}}));
}

TEST(ShapeVariantsCodec, AReferenceOutsideSetZerosSectionIsRefused) {
  const Fixture f = fixture();
  const ShapeVariantsEncoding enc = encodeShapeVariants(f.base, {{{1, 3, 16, 16}}}, {f.variant});
  std::map<uint32_t, std::string> shorter = f.base;
  shorter[blob::kSectionNpuWeights].resize(4096);
  try {
    decodeShapeVariants(enc.bytes, pointers(shorter));
    FAIL() << "expected a BlobError";
  } catch (const BlobError& e) {
    EXPECT_NE(
        std::string(e.what()).find("variant 1 section 'NWGT': reference [0, +8192) lies outside set 0's "
                                   "4096-byte section"),
        std::string::npos)
        << e.what();
  }
  std::map<uint32_t, std::string> without = f.base;
  without.erase(blob::kSectionNpuWeights);
  EXPECT_THROW(decodeShapeVariants(enc.bytes, pointers(without)), BlobError);
  for (size_t cut = 0; cut < enc.bytes.size(); cut += 7)  // every truncation refused, none crashes
    EXPECT_THROW(decodeShapeVariants(enc.bytes.substr(0, cut), pointers(f.base)), BlobError) << cut;
}

}  // namespace
}  // namespace npuc
