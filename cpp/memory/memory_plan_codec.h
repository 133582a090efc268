// The NpuMemoryPlan as bytes: the payload of a .npub blob's MPLN section, so a loaded blob
// reports (and a runtime allocates) exactly the arena the build planned.
#pragma once

#include <cstdint>
#include <string>

#include "memory/npu_memory_plan.h"

namespace npuc::memory {

// Format version of the payload; decodeMemoryPlan refuses any other.
constexpr uint32_t kMemoryPlanCodecVersion = 1;

// Deterministic: buffers in plan order, every field fixed-width little-endian.
std::string encodeMemoryPlan(const NpuMemoryPlan& plan);
// Decodes and validates a payload: BlobError naming the field and its absolute file offset
// (`base_offset` is where the payload starts in the file) on anything malformed, and on a plan
// that breaks its invariants (misaligned, outside the arena, overlapping live buffers).
NpuMemoryPlan decodeMemoryPlan(std::string_view bytes, uint64_t base_offset = 0);

}  // namespace npuc::memory
