#include "quant/graph/quant_plan_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "blob/blob_limits.h"
#include "blob/byte_io.h"
#include "common/error.h"

namespace npuc::quant {

namespace {

// Value and node names take the blob's name limit (blob/blob_limits.h).
using blob::kMaxNameBytes;

// Codec 2: how an entry's zero points follow its scales.
constexpr uint8_t kZeroPointsStored = 0;   // u32 count, then count x i32
constexpr uint8_t kZeroPointsAllZero = 1;  // none stored: one 0 per scale

// Codec 3: whether an entry is a grouped weight.
constexpr uint8_t kNotGrouped = 0;
constexpr uint8_t kGrouped = 1;  // i64 group_size, u32 count, count x u8 multiplier

// Codec 3: whether an entry carries integers an imported QDQ file fixed (TensorQuant::given_values).
constexpr uint8_t kNoGivenValues = 0;
constexpr uint8_t kGivenValues = 1;  // u32 count (one per scale), count x i64

uint8_t dtypeCode(QuantDType t) {
  return static_cast<uint8_t>(t);
}

// Codes 0-2 (Int8, Int32, Float16) exist since codec 1; Int16, Int4 and Int64 since codec 3.
QuantDType dtypeFromCode(uint8_t code, uint32_t version, const blob::ByteReader& r) {
  const QuantDType last = version >= 3 ? QuantDType::Int64 : QuantDType::Float16;
  if (code > static_cast<uint8_t>(last))
    r.fail(fmt::format("unknown quantized dtype code {} (codec version {})", code, version));
  return static_cast<QuantDType>(code);
}

QuantScheme decodeScheme(blob::ByteReader& r) {
  const uint8_t code = r.u8("quantized dtype (scheme)");
  const int64_t group = r.i64("weight group");
  if (code > static_cast<uint8_t>(SchemeDType::W4A16))
    r.fail(fmt::format("quantized dtype (scheme) code {} is invalid", code));
  try {
    return QuantScheme::of(static_cast<SchemeDType>(code), group);
  } catch (const ConfigError& e) {
    r.fail(e.what());
  }
}

void decodeGroups(blob::ByteReader& r, const std::string& name, TensorQuant& q) {
  const uint8_t kind = r.u8("weight grouping flag");
  if (kind == kNotGrouped) return;
  if (kind != kGrouped) r.fail(fmt::format("tensor '{}': weight grouping flag {} is invalid", name, kind));
  q.group_size = r.i64("weight group size");
  if (q.group_size < 1)
    r.fail(fmt::format("tensor '{}': weight group size {} is invalid", name, q.group_size));
  const uint32_t n = r.count("group multipliers", 1);
  // One multiplier per (channel, group): a whole number of groups per channel.
  if (n == 0 || n % q.scales.size() != 0)
    r.fail(fmt::format("tensor '{}': {} group multipliers for {} channels", name, n, q.scales.size()));
  q.group_multipliers.reserve(n);
  for (uint32_t k = 0; k < n; ++k) {
    const uint8_t m = r.u8("group multiplier");
    if (m == 0) r.fail(fmt::format("tensor '{}': group multiplier 0 (they are in [1, 255])", name));
    q.group_multipliers.push_back(m);
  }
}

void decodeGivenValues(blob::ByteReader& r, const std::string& name, TensorQuant& q) {
  const uint8_t kind = r.u8("given values flag");
  if (kind == kNoGivenValues) return;
  if (kind != kGivenValues) r.fail(fmt::format("tensor '{}': given values flag {} is invalid", name, kind));
  const uint32_t n = r.count("given values", 8);
  // One integer per output channel, as the plan's scales.
  if (n != q.scales.size())
    r.fail(fmt::format("tensor '{}': {} given values for {} scales", name, n, q.scales.size()));
  q.given_values.reserve(n);
  for (uint32_t k = 0; k < n; ++k) q.given_values.push_back(r.i64("given value"));
}

}  // namespace

std::string encodeQuantPlan(const QuantPlan& plan) {
  blob::ByteWriter w;
  w.u32(kQuantPlanCodecVersion);
  w.u8(plan.weight_granularity == WeightGranularity::PerChannel ? 1 : 0);
  w.u8(static_cast<uint8_t>(plan.scheme.dtype));
  w.i64(plan.scheme.weight_group);
  w.count(plan.tensors.size(), "quantized tensors");
  for (const auto& [name, q] : plan.tensors) {
    w.str(name, kMaxNameBytes, "quantized tensor name");
    w.u8(dtypeCode(q.dtype));
    w.i64(q.axis);
    w.count(q.scales.size(), "scales");
    for (float s : q.scales) w.f32(s);
    // Per-channel entries are symmetric (zero points all 0): half of the section in 1.2 blobs.
    const bool all_zero =
        std::all_of(q.zero_points.begin(), q.zero_points.end(), [](int32_t z) { return z == 0; });
    w.u8(all_zero && q.zero_points.size() == q.scales.size() ? kZeroPointsAllZero : kZeroPointsStored);
    if (!all_zero || q.zero_points.size() != q.scales.size()) {
      w.count(q.zero_points.size(), "zero points");
      for (int32_t z : q.zero_points) w.i32(z);
    }
    if (q.group_size == 0 && q.group_multipliers.empty()) {
      w.u8(kNotGrouped);
    } else {
      w.u8(kGrouped);
      w.i64(q.group_size);
      w.count(q.group_multipliers.size(), "group multipliers");
      for (int32_t m : q.group_multipliers) {
        if (m < 1 || m > 255)
          throw ConfigError(fmt::format("tensor '{}': group multiplier {} is outside [1, 255]", name, m));
        w.u8(static_cast<uint8_t>(m));
      }
    }
    w.u8(q.given_values.empty() ? kNoGivenValues : kGivenValues);
    if (q.given_values.empty()) continue;
    if (q.given_values.size() != q.scales.size())
      throw ConfigError(fmt::format("tensor '{}': {} given values for {} scales", name, q.given_values.size(),
                                    q.scales.size()));
    w.count(q.given_values.size(), "given values");
    for (int64_t v : q.given_values) w.i64(v);
  }
  w.count(plan.nodes.size(), "node precisions");
  for (const auto& [name, p] : plan.nodes) {
    w.str(name, kMaxNameBytes, "node name");
    w.u8(p == NodePrecision::Int8 ? 0 : 1);
  }
  return w.take();
}

QuantPlan decodeQuantPlan(std::string_view bytes, uint64_t base_offset) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), base_offset,
                     "QUNT section");
  const uint32_t version = r.u32("quantization plan version");
  if (version < kOldestQuantPlanCodecVersion || version > kQuantPlanCodecVersion) {
    r.fail(fmt::format("quantization plan version {} is not supported (expected {} to {})", version,
                       kOldestQuantPlanCodecVersion, kQuantPlanCodecVersion));
  }
  QuantPlan plan;
  const uint8_t granularity = r.u8("weight granularity");
  if (granularity > 1) r.fail(fmt::format("weight granularity code {} is invalid", granularity));
  plan.weight_granularity = granularity ? WeightGranularity::PerChannel : WeightGranularity::PerTensor;
  if (version >= 3) plan.scheme = decodeScheme(r);  // older payloads are w8a8 plans
  // Each tensor entry takes at least: name length (4) + dtype (1) + axis (8) + a count (4) + the
  // zero-point flag (1, codec 2) or count (4, codec 1) + the grouping and given-values flags (2,
  // codec 3).
  const uint32_t n_tensors = r.count("quantized tensors", version == 1 ? 21 : version == 2 ? 18 : 20);
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str("tensor name", kMaxNameBytes);
    TensorQuant q;
    q.dtype = dtypeFromCode(r.u8("tensor dtype"), version, r);
    q.axis = r.i64("quantization axis");
    if (q.axis < -1) r.fail(fmt::format("tensor '{}': axis {} is invalid", name, q.axis));
    const uint32_t n_scales = r.count("scales", 4);
    for (uint32_t k = 0; k < n_scales; ++k) {
      const float s = r.f32("scale");
      if (!(s > 0.0f) || s != s) r.fail("tensor '" + name + "': scale must be positive and finite");
      q.scales.push_back(s);
    }
    const uint8_t zp_kind = version == 1 ? kZeroPointsStored : r.u8("zero point encoding");
    if (zp_kind == kZeroPointsAllZero) {
      q.zero_points.assign(q.scales.size(), 0);
    } else if (zp_kind == kZeroPointsStored) {
      const uint32_t n_zps = r.count("zero points", 4);
      for (uint32_t k = 0; k < n_zps; ++k) q.zero_points.push_back(r.i32("zero point"));
    } else {
      r.fail(fmt::format("tensor '{}': zero point encoding {} is invalid", name, zp_kind));
    }
    if (q.scales.empty() || q.scales.size() != q.zero_points.size() || (q.axis < 0 && q.scales.size() != 1)) {
      r.fail(fmt::format("tensor '{}': {} scales and {} zero points do not describe axis {}", name,
                         q.scales.size(), q.zero_points.size(), q.axis));
    }
    if (version >= 3) {
      decodeGroups(r, name, q);
      decodeGivenValues(r, name, q);
    }
    if (!plan.tensors.emplace(std::move(name), std::move(q)).second) r.fail("a tensor is listed twice");
  }
  const uint32_t n_nodes = r.count("node precisions", 5);
  for (uint32_t i = 0; i < n_nodes; ++i) {
    std::string name = r.str("node name", kMaxNameBytes);
    const uint8_t code = r.u8("node precision");
    if (code > 1) r.fail(fmt::format("node '{}': precision code {} is invalid", name, code));
    if (!plan.nodes.emplace(std::move(name), code == 0 ? NodePrecision::Int8 : NodePrecision::Float16)
             .second) {
      r.fail("a node is listed twice");
    }
  }
  r.expectEnd();
  return plan;
}

}  // namespace npuc::quant
