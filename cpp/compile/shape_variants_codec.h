// The SHPV section (config(dynamic_input)): the compiled models of the input-shape sets after the
// first, each recorded as the blob it would be on its own, with every section payload split into
// chunks that are either literal bytes or a reference [offset, +size) into the same-kind section
// of the enclosing (set 0) blob. A variant's weights (WGHT constants, NWGT packed weights) are
// byte-identical to set 0's when only activation shapes differ, so they are stored once.
// References are checked by rebuilding each variant's blob and verifying it like a file (its
// SDIG digests cover every rebuilt payload). Layout: docs/blob_format.md, "SHPV".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace npuc {

constexpr uint32_t kShapeVariantsVersion = 1;

// How much of one variant section SHPV stores as references.
struct VariantSectionStats {
  uint32_t kind = 0;
  uint64_t bytes = 0;       // the payload's size
  uint64_t referenced = 0;  // of which stored as references into set 0's section
};

struct ShapeVariantsEncoding {
  std::string bytes;                                       // the SHPV payload
  std::vector<std::vector<VariantSectionStats>> sections;  // per variant, per section (file order)
};

// One decoded variant: its input shapes (as recorded, for messages) and its rebuilt blob.
struct ShapeVariantRecord {
  std::vector<Shape> input_shapes;
  std::string blob;
};

// `base`: set 0's section payloads by kind (never SDIG or SHPV); `variant_blobs[i]`: variant i's
// whole blob as writeBlobBytes made it; `shapes[i]`: its input shapes. Deterministic.
ShapeVariantsEncoding encodeShapeVariants(const std::map<uint32_t, std::string>& base,
                                          const std::vector<std::vector<Shape>>& shapes,
                                          const std::vector<std::string>& variant_blobs);

// The variants' rebuilt blobs, not yet verified (the caller reads them as blobs). BlobError
// ("corrupt blob: SHPV section ...") for a malformed record or a reference outside its base.
std::vector<ShapeVariantRecord> decodeShapeVariants(std::string_view bytes,
                                                    const std::map<uint32_t, std::string_view>& base);

}  // namespace npuc
