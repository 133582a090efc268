#include "memory/memory_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/byte_io.h"
#include "common/error.h"
#include "runtime/memory_planner.h"
#include "target/op_geometry.h"

namespace npuc::memory {

namespace {

int64_t roundUpTo(int64_t x, int64_t multiple) {
  return multiple <= 1 ? x : (x + multiple - 1) / multiple * multiple;
}

int64_t product(const Shape& s, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= s[i];
  return n;
}

// Alignments of the MAC array for a constant stored in `dtype` (1 when the NPU has none).
struct MacAlign {
  int64_t in = 1, out = 1, depthwise = 1;
};

MacAlign macAlign(DType storage, const SocProfile& soc, const quant::QuantPlan* plan) {
  // int8 weights (and int32 biases of int8 layers) follow the int8 rows; fp16 the fp16 rows. The
  // integer weights and biases of an a16 scheme (w8a16, w16a16i, w4a16) follow the int16 rows:
  // the lowering packs them for the int16 array.
  const bool integer =
      storage == DType::Int8 || storage == DType::Int16 || storage == DType::Int32 || storage == DType::Int64;
  const DType row = integer && plan && plan->scheme.activation_bits == 16 ? DType::Int16
                    : storage == DType::Int32                             ? DType::Int8
                                                                          : storage;
  const std::optional<NpuDType> t = alignmentDType(row);
  if (!t || !soc.supportsDtype(*t)) return {};
  return {soc.alignment(*t, AlignmentRole::ConvInput), soc.alignment(*t, AlignmentRole::ConvOutput),
          soc.alignment(*t, AlignmentRole::Depthwise)};
}

// Elements of constant `v` packed for the NPU, given the node reading it as input `slot`.
int64_t packedElements(const Value& v, DType storage, const Node& reader, size_t slot, const SocProfile& soc,
                       const quant::QuantPlan* plan) {
  const Shape& s = v.shape();
  const MacAlign a = macAlign(storage, soc, plan);
  const std::string& op = reader.opType();
  if (op == "Conv" && s.size() >= 2) {
    const bool dw = isDepthwiseConv(reader);
    const int64_t out_align = dw ? a.depthwise : a.out;
    if (slot == 1) {  // [O, I/group, k...]
      const int64_t in = dw ? s[1] : roundUpTo(s[1], a.in);
      return roundUpTo(s[0], out_align) * in * product(s, 2);
    }
  }
  if (op == "Conv" && slot == 2 && s.size() == 1)
    return roundUpTo(s[0], isDepthwiseConv(reader) ? a.depthwise : a.out);
  if ((op == "Gemm" || op == "MatMul") && slot == 1 && s.size() == 2) {
    // Run as a 1x1 conv: the output dim padded like conv outputs, the reduction dim like inputs.
    const bool out_first = op == "Gemm" && reader.attrs().i("transB", 0) != 0;
    const int64_t out = out_first ? s[0] : s[1];
    const int64_t red = out_first ? s[1] : s[0];
    return roundUpTo(out, a.out) * roundUpTo(red, a.in);
  }
  if (op == "Gemm" && slot == 2 && s.size() == 1) return roundUpTo(s[0], a.out);
  return npuStoredElements(s, storage, soc);
}

std::string mib(uint64_t bytes) {
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string shapeText(const Shape& s) {
  return fmt::format("[{}]", fmt::join(s, ","));
}

}  // namespace

std::vector<WeightRow> weightMemory(const Graph& graph, const quant::QuantPlan* quant_plan,
                                    const SocProfile& soc, const PartitionReport& placement) {
  std::vector<WeightRow> rows;
  std::set<const Value*> seen;
  for (const Node* n : graph.nodes()) {
    for (size_t slot = 0; slot < n->numInputs(); ++slot) {
      const Value* v = n->input(slot);
      if (!v || !v->isConstant() || v->isGraphInput() || !seen.insert(v).second) continue;
      bool npu = false, cpu = false;
      for (const Use& u : v->uses()) (placement.deviceOf(u.user) == Device::Npu ? npu : cpu) = true;
      if (npu) {
        // Sized by its first NPU reader (shared weights are packed once).
        const Node* reader = n;
        size_t reader_slot = slot;
        for (const Use& u : v->uses()) {
          if (placement.deviceOf(u.user) == Device::Npu) {
            reader = u.user;
            reader_slot = u.index;
            break;
          }
        }
        const DType storage = npuStorageDType(*v, quant_plan);
        const int64_t elems = packedElements(*v, storage, *reader, reader_slot, soc, quant_plan);
        uint64_t bytes = static_cast<uint64_t>(elems) * dtypeSize(storage);
        int bits = static_cast<int>(dtypeSize(storage) * 8);
        const quant::TensorQuant* entry =
            quant_plan && quant_plan->has(v->name()) ? &quant_plan->at(v->name()) : nullptr;
        if (entry && entry->dtype == quant::QuantDType::Int4) {  // the blob's nibbles + multipliers
          bits = 4;
          bytes = (static_cast<uint64_t>(elems) + 1) / 2 + entry->group_multipliers.size();
        }
        rows.push_back(
            {v->name(), BufferFormat::Npu, storage, v->shape(), alignUp(bytes, blob::kBlobAlignment), bits});
      }
      if (cpu) {
        rows.push_back({v->name(), BufferFormat::Host, v->dtype(), v->shape(),
                        alignUp(v->constant().nbytes(), blob::kBlobAlignment),
                        static_cast<int>(dtypeSize(v->dtype()) * 8)});
      }
    }
  }
  return rows;
}

MemoryReport memoryReport(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                          NpuMemoryPlan plan, uint64_t blob_bytes, uint64_t blob_weight_section_bytes,
                          uint64_t blob_packed_weight_section_bytes) {
  return memoryReport(graph, quant_plan, soc, partitionGraph(graph, soc), std::move(plan), blob_bytes,
                      blob_weight_section_bytes, blob_packed_weight_section_bytes);
}

MemoryReport memoryReport(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                          const PartitionReport& placement, NpuMemoryPlan plan, uint64_t blob_bytes,
                          uint64_t blob_weight_section_bytes, uint64_t blob_packed_weight_section_bytes) {
  MemoryReport rep;
  rep.soc = soc.name;
  // "int8" for w8a8 (as before #17), the quantized_dtype ("w8a16", "w4a16", ...) otherwise.
  rep.mode = !quant_plan ? "fp16"
             : quant_plan->scheme.dtype == quant::SchemeDType::W8A8
                 ? "int8"
                 : quant::schemeDTypeName(quant_plan->scheme.dtype);
  rep.weights = weightMemory(graph, quant_plan, soc, placement);
  for (const WeightRow& w : rep.weights) rep.weight_bytes += w.bytes;
  rep.arena_bytes = plan.arena_bytes;
  rep.lower_bound_bytes = plan.lower_bound_bytes;
  rep.io_bytes = plan.ioBytes();
  rep.blob_bytes = blob_bytes;
  rep.blob_weight_section_bytes = blob_weight_section_bytes;
  rep.blob_packed_weight_section_bytes = blob_packed_weight_section_bytes;
  const uint64_t weight_sections = blob_weight_section_bytes + blob_packed_weight_section_bytes;
  rep.other_bytes = blob_bytes - std::min(blob_bytes, weight_sections);
  rep.total_bytes = rep.weight_bytes + rep.arena_bytes + rep.io_bytes + rep.other_bytes;
  rep.plan = std::move(plan);
  return rep;
}

std::string MemoryReport::toText(size_t max_tensor_rows) const {
  fmt::memory_buffer o;
  auto out = std::back_inserter(o);
  const std::string rule(62, '=');
  fmt::format_to(out, "{}\n              Memory Profile Info Dump ({}, {})\n{}\n", rule, soc, mode, rule);
  fmt::format_to(out, "NPU model memory detail (bytes):\n");
  fmt::format_to(out, "    Total Weight Memory:          {} ({}, {} tensors, NPU-packed)\n",
                 mib(weight_bytes), weight_bytes, weights.size());
  fmt::format_to(out, "    Total Internal Tensor Memory: {} ({}, one arena; lower bound {}, {:.3f}x)\n",
                 mib(arena_bytes), arena_bytes, lower_bound_bytes, arenaRatio());
  fmt::format_to(out, "    Node order:                   {} (lower bound {}, exporter order's {}, {:.3f}x)\n",
                 plan.order, lower_bound_bytes, plan.exporter_order_bound_bytes, plan.orderRatio());
  if (const size_t n = plan.containers().size())
    fmt::format_to(out, "    In-place Concats:             {} (inputs written into the output's buffer)\n",
                   n);
  fmt::format_to(out, "    Total I/O Memory:             {} ({}, graph inputs and outputs)\n", mib(io_bytes),
                 io_bytes);
  fmt::format_to(out, "    Total Other Memory:           {} ({}, graph, tasks, metadata in the blob)\n",
                 mib(other_bytes), other_bytes);
  fmt::format_to(out, "    Total Memory:                 {} ({})\n", mib(total_bytes), total_bytes);
  std::vector<const PlannedBuffer*> arena;
  for (const PlannedBuffer& b : plan.buffers)
    if (b.home == BufferHome::Arena) arena.push_back(&b);
  std::stable_sort(arena.begin(), arena.end(),
                   [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->bytes > b->bytes; });
  if (!arena.empty()) {
    fmt::format_to(out, "Largest internal tensors (of {}, plan {}, placement {}):\n", arena.size(),
                   plan_from_blob ? "from the blob" : "computed", plan.strategy);
    for (size_t i = 0; i < arena.size() && i < max_tensor_rows; ++i) {
      const PlannedBuffer& b = *arena[i];
      fmt::format_to(out, "    {} {}{} {}: {} bytes at offset {}, steps {}..{}\n", b.value,
                     dtypeName(b.dtype), shapeText(b.shape), bufferFormatName(b.format), b.bytes, b.offset,
                     b.first, b.last);
    }
  }
  fmt::format_to(out, "{}\n", rule);
  return fmt::to_string(o);
}

}  // namespace npuc::memory
