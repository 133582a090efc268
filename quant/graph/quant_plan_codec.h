// The QuantPlan as bytes: the payload of a .npub blob's QUNT section, so a quantized model
// loaded from a blob runs on the simulator exactly as the in-memory build did.
#pragma once

#include <cstdint>
#include <string>

#include "quant/graph/quant_plan.h"

namespace npuc::quant {

// Format version of the payload; decodeQuantPlan refuses any other.
constexpr uint32_t kQuantPlanCodecVersion = 1;

// Encodes what the simulator needs: granularity, per-value parameters and per-node precision.
// Build-time diagnostics (outlier rows, warnings) are not stored. Deterministic (maps are sorted).
std::string encodeQuantPlan(const QuantPlan& plan);
// Decodes and validates a payload; BlobError naming the field and its absolute file offset
// (`base_offset` is where the payload starts in the file) on anything malformed.
QuantPlan decodeQuantPlan(const std::string& bytes, uint64_t base_offset = 0);

}  // namespace npuc::quant
