#include "memory/memory_plan_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "common/error.h"

namespace npuc::memory {

namespace {

// Value names and the strategy take the blob's name limit (blob/blob_limits.h).
using blob::kMaxNameBytes;
// Largest alignment a plan may ask for: far above any DMA requirement, so anything bigger is
// corruption rather than a real plan.
constexpr uint64_t kMaxAlignment = 1 << 20;
// Bytes of one buffer entry without its name and shape: name length (4), format (1), home (1),
// dtype (4), rank (4), bytes (8), first (8), last (8), offset (8).
constexpr size_t kMinBufferEntryBytes = 46;

}  // namespace

std::string encodeMemoryPlan(const NpuMemoryPlan& plan) {
  blob::ByteWriter w;
  const bool exporter_order =
      plan.order == "exporter" && plan.exporter_order_bound_bytes == plan.lower_bound_bytes;
  const bool nested = std::any_of(plan.buffers.begin(), plan.buffers.end(),
                                  [](const PlannedBuffer& b) { return b.within != -1; });
  const uint32_t version = nested ? 3 : exporter_order ? 1 : 2;
  w.u32(version);
  w.u64(plan.alignment);
  w.u64(plan.arena_bytes);
  w.u64(plan.lower_bound_bytes);
  w.str(plan.strategy, kMaxNameBytes, "memory plan strategy");
  if (version >= 2) {
    w.str(plan.order, kMaxNameBytes, "memory plan node order");
    w.u64(plan.exporter_order_bound_bytes);
  }
  w.count(plan.buffers.size(), "planned buffers");
  for (const PlannedBuffer& b : plan.buffers) {
    w.str(b.value, kMaxNameBytes, "planned buffer name");
    w.u8(static_cast<uint8_t>(b.format));
    w.u8(static_cast<uint8_t>(b.home));
    w.i32(static_cast<int32_t>(b.dtype));
    if (b.shape.size() > blob::kMaxRank)
      throw BlobError(
          fmt::format("cannot write blob: planned buffer '{}' has rank {}, more than the .npub limit of {}",
                      b.value, b.shape.size(), blob::kMaxRank));
    w.count(b.shape.size(), "shape dims");
    for (int64_t d : b.shape) w.i64(d);
    w.u64(b.bytes);
    w.i64(b.first);
    w.i64(b.last);
    w.u64(b.offset);
    if (version >= 3) w.i32(static_cast<int32_t>(b.within));
  }
  return w.take();
}

NpuMemoryPlan decodeMemoryPlan(std::string_view bytes, uint64_t base_offset) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), base_offset,
                     "MPLN section");
  const uint32_t version = r.u32("memory plan version");
  if (version < 1 || version > kMemoryPlanCodecVersion) {
    r.fail(fmt::format("memory plan version {} is not supported (expected {})", version,
                       kMemoryPlanCodecVersion));
  }
  NpuMemoryPlan plan;
  plan.alignment = r.u64("arena alignment");
  if (plan.alignment == 0 || (plan.alignment & (plan.alignment - 1)) || plan.alignment > kMaxAlignment)
    r.fail(fmt::format("arena alignment {} is not a power of two up to 1 MiB", plan.alignment));
  plan.arena_bytes = r.u64("arena bytes");
  plan.lower_bound_bytes = r.u64("arena lower bound");
  plan.strategy = r.str("placement strategy", kMaxNameBytes);
  if (version >= 2) {
    plan.order = r.str("node order", kMaxNameBytes);
    plan.exporter_order_bound_bytes = r.u64("exporter order lower bound");
    if (plan.exporter_order_bound_bytes < plan.lower_bound_bytes)  // the order is chosen only if it lowers it
      r.fail(fmt::format("exporter order bound {} is below the plan's lower bound {}",
                         plan.exporter_order_bound_bytes, plan.lower_bound_bytes));
  } else {  // written before the order was chosen: the exporter's
    plan.exporter_order_bound_bytes = plan.lower_bound_bytes;
  }
  const uint32_t n = r.count("planned buffers", kMinBufferEntryBytes);
  plan.buffers.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    PlannedBuffer b;
    b.value = r.str("buffer value name", kMaxNameBytes);
    const std::string who = "buffer '" + b.value + "'";
    const uint8_t format = r.u8("buffer format");
    if (format > static_cast<uint8_t>(BufferFormat::Host))
      r.fail(fmt::format("{}: format code {} is invalid", who, format));
    b.format = static_cast<BufferFormat>(format);
    const uint8_t home = r.u8("buffer home");
    if (home > static_cast<uint8_t>(BufferHome::Output))
      r.fail(fmt::format("{}: home code {} is invalid", who, home));
    b.home = static_cast<BufferHome>(home);
    const int32_t dtype = r.i32("buffer dtype");
    b.dtype = dtypeFromOnnx(dtype);
    if (!isStorable(b.dtype)) r.fail(fmt::format("{}: dtype code {} is invalid", who, dtype));
    const uint32_t rank = r.count("shape dims", 8);
    if (rank > blob::kMaxRank) r.fail(fmt::format("{}: rank {} is above {}", who, rank, blob::kMaxRank));
    for (uint32_t k = 0; k < rank; ++k) {
      const int64_t d = r.i64("shape dim");
      if (d < 0) r.fail(fmt::format("{}: dim {} is negative", who, d));
      b.shape.push_back(d);
    }
    b.bytes = r.u64("buffer bytes");
    b.first = r.i64("first step");
    b.last = r.i64("last step");
    b.offset = r.u64("buffer offset");
    if (version >= 3) {
      const int32_t within = r.i32("buffer container");
      if (within < -1 || within >= static_cast<int64_t>(n))
        r.fail(fmt::format("{}: container index {} is not a buffer of the plan", who, within));
      b.within = within;
    }
    plan.buffers.push_back(std::move(b));
  }
  r.expectEnd();
  // The plan is trusted by whoever allocates the arena: check its invariants before handing it out.
  const std::string violation = findPlanViolation(plan);
  if (!violation.empty())
    throw BlobError(fmt::format("MPLN section at offset {}: {}", base_offset, violation));
  return plan;
}

}  // namespace npuc::memory
