// config(dynamic_input) on the compiled model: writing CompiledModel::shape_variants into the
// blob's SHPV section, loading them back, and the numbers of what the sets share (the build's and
// eval_memory's reuse report). The section's layout is compile/shape_variants_codec.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "compile/compiled_model.h"

namespace npuc {

// Adds SHPV for `m.shape_variants` to `opts`, which must hold every other section of m's blob.
// ConfigError when a variant was compiled for another SoC or with other options, or has inputs /
// outputs other than m's (by count and name): the blob would run a different model per shape.
void addShapeVariantsSection(const CompiledModel& m, blob::BlobWriteOptions& opts);

// The variants a loaded blob's SHPV section records (empty without one); `m` is set 0 as just
// loaded from `b`. BlobError naming `origin` and the variant for anything corrupt or inconsistent.
std::vector<CompiledModel> loadShapeVariants(const blob::LoadedBlob& b, const CompiledModel& m,
                                             const std::string& origin,
                                             std::shared_ptr<const CustomOpSet> custom_ops);

// What the shape sets share in the blob (every number measured from the bytes written).
struct ShapeVariantReuse {
  int64_t sets = 1;
  uint64_t packed_weight_bytes_stored = 0;       // NWGT bytes in the file (set 0's + literal variant bytes)
  uint64_t packed_weight_bytes_per_program = 0;  // sum of every set's NWGT
  int64_t programs_sharing_packed_weights = 0;   // sets whose NWGT is wholly set 0's bytes (set 0 counts)
  uint64_t weight_bytes_stored = 0;              // WGHT likewise
  uint64_t weight_bytes_per_program = 0;
  uint64_t variant_payload_bytes = 0;            // every variant section's size
  uint64_t variant_referenced_bytes = 0;         // of which stored as references
  uint64_t shpv_bytes = 0;                       // the SHPV payload
  int64_t pipelines = 0;                         // every set's pipelines, summed
  int64_t pipelines_shared = 0;                  // of which another set has one with the same digest
};
ShapeVariantReuse shapeVariantReuse(const CompiledModel& m);

}  // namespace npuc
