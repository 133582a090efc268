// The NpuMemoryPlan as bytes: the payload of a .npub blob's MPLN section, so a loaded blob
// reports (and a runtime allocates) exactly the arena the build planned.
#pragma once

#include <cstdint>
#include <string>

#include "memory/npu_memory_plan.h"

namespace npuc::memory {

// Format version of the payload; decodeMemoryPlan reads 1, 2 and 3 and refuses any other.
// 2 adds the node order's name and the exporter order's lower bound (issue #19); 3 adds, per
// buffer, the buffer it is planned within (in-place Concat, memory/concat_in_place.h). Each plan
// is written in the lowest version that holds it: a plan for the exporter's order without in-place
// Concats is still version 1, so its blob stays byte-identical to earlier builds' and readable by
// earlier npuc versions; earlier versions refuse a version-3 plan with a BlobError.
constexpr uint32_t kMemoryPlanCodecVersion = 3;

// Deterministic: buffers in plan order, every field fixed-width little-endian.
std::string encodeMemoryPlan(const NpuMemoryPlan& plan);
// Decodes and validates a payload: BlobError naming the field and its absolute file offset
// (`base_offset` is where the payload starts in the file) on anything malformed, and on a plan
// that breaks its invariants (misaligned, outside the arena, overlapping live buffers).
NpuMemoryPlan decodeMemoryPlan(std::string_view bytes, uint64_t base_offset = 0);

}  // namespace npuc::memory
