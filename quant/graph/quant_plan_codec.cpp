#include "quant/graph/quant_plan_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "blob/blob_limits.h"
#include "blob/byte_io.h"

namespace npuc::quant {

namespace {

// Value and node names take the blob's name limit (blob/blob_limits.h).
using blob::kMaxNameBytes;

// Codec 2: how an entry's zero points follow its scales.
constexpr uint8_t kZeroPointsStored = 0;   // u32 count, then count x i32
constexpr uint8_t kZeroPointsAllZero = 1;  // none stored: one 0 per scale

uint8_t dtypeCode(QuantDType t) {
  return static_cast<uint8_t>(t);
}

QuantDType dtypeFromCode(uint8_t code, const blob::ByteReader& r) {
  if (code > static_cast<uint8_t>(QuantDType::Float16))
    r.fail(fmt::format("unknown quantized dtype code {}", code));
  return static_cast<QuantDType>(code);
}

}  // namespace

std::string encodeQuantPlan(const QuantPlan& plan) {
  blob::ByteWriter w;
  w.u32(kQuantPlanCodecVersion);
  w.u8(plan.weight_granularity == WeightGranularity::PerChannel ? 1 : 0);
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
  }
  w.count(plan.nodes.size(), "node precisions");
  for (const auto& [name, p] : plan.nodes) {
    w.str(name, kMaxNameBytes, "node name");
    w.u8(p == NodePrecision::Int8 ? 0 : 1);
  }
  return w.take();
}

QuantPlan decodeQuantPlan(const std::string& bytes, uint64_t base_offset) {
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
  // Each tensor entry takes at least: name length (4) + dtype (1) + axis (8) + a count (4) + the
  // zero-point flag (1, codec 2) or count (4, codec 1).
  const uint32_t n_tensors = r.count("quantized tensors", version == 1 ? 21 : 18);
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str("tensor name", kMaxNameBytes);
    TensorQuant q;
    q.dtype = dtypeFromCode(r.u8("tensor dtype"), r);
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
