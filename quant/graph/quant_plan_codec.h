// The QuantPlan as bytes: the payload of a .npub blob's QUNT section, so a quantized model
// loaded from a blob runs on the simulator exactly as the in-memory build did.
#pragma once

#include <cstdint>
#include <string>

#include "quant/graph/quant_plan.h"

namespace npuc::quant {

// Format version of the payload the encoder writes. 3 (blob format 2.1): the plan's scheme
// (quantized_dtype, weight group) after the granularity, the dtype codes Int16 / Int4 / Int64, and
// per entry a grouping flag (then group_size and the u8 group multipliers). 2 (blob format 2.0): an
// entry whose zero points are all zero (every weight and bias entry: they are symmetric) stores a
// flag instead of them. decodeQuantPlan also reads 2 and 1 (blob format 1.2: every zero point
// stored), both as w8a8 plans, and refuses others.
constexpr uint32_t kQuantPlanCodecVersion = 3;
constexpr uint32_t kOldestQuantPlanCodecVersion = 1;

// Encodes what the simulator needs: granularity, per-value parameters and per-node precision.
// Build-time diagnostics (outlier rows, warnings) are not stored. Deterministic (maps are sorted).
std::string encodeQuantPlan(const QuantPlan& plan);
// Decodes and validates a payload; BlobError naming the field and its absolute file offset
// (`base_offset` is where the payload starts in the file) on anything malformed.
QuantPlan decodeQuantPlan(std::string_view bytes, uint64_t base_offset = 0);

}  // namespace npuc::quant
