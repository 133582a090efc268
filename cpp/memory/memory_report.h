// eval_memory: what a compiled model needs in memory on the device, in RKNN's terms ("Total
// Weight Memory", "Total Internal Tensor Memory", "Total Memory") plus the I/O buffers and the
// arena's distance from its lower bound, with per-tensor detail.
//
//   weights   every constant as the NPU stores it: its NPU dtype (int8 weights, int32 biases per
//             the QuantPlan; fp16 in a float build), Conv / Gemm / MatMul weights packed with
//             output channels padded to the conv_out (depthwise) alignment and input channels to
//             conv_in, each tensor rounded up to the blob's 64-byte alignment; constants read by a
//             CPU fallback op are counted at host size (FP32) as well;
//   arena     the activation arena of the NpuMemoryPlan;
//   I/O       the plan's input and output buffers;
//   other     what the blob holds besides weights (header, graph, tasks, pipelines, quantization,
//             memory plan, metadata): the blob's size minus its WGHT (and packed NWGT) sections;
//   total     the sum of the four.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memory/npu_memory_plan.h"

namespace npuc::memory {

struct WeightRow {
  std::string value;
  BufferFormat format = BufferFormat::Npu;
  DType dtype = DType::Undefined;
  Shape shape;
  uint64_t bytes = 0;  // stored, aligned
  // Bits per stored element: 4 for w4a16's int4 weights (dtype then says int8, their unpacked
  // type; bytes = half a byte each + one u8 group multiplier per group), else dtype's size.
  int element_bits = 0;
};

struct MemoryReport {
  std::string soc;
  std::string mode;  // "int8" or "fp16"
  uint64_t weight_bytes = 0;
  uint64_t arena_bytes = 0;
  uint64_t lower_bound_bytes = 0;
  uint64_t io_bytes = 0;
  uint64_t other_bytes = 0;
  uint64_t total_bytes = 0;
  // The blob's WGHT section as stored today (format 1.0 keeps FP32 plain weights; the NPU-packed
  // form is what weight_bytes counts).
  uint64_t blob_weight_section_bytes = 0;
  uint64_t blob_packed_weight_section_bytes = 0;  // NWGT, when the lowering wrote packed weights
  uint64_t blob_bytes = 0;
  bool plan_from_blob = false;  // the MPLN section's plan, not a fresh one
  NpuMemoryPlan plan;
  std::vector<WeightRow> weights;

  double arenaRatio() const { return plan.ratio(); }
  // RKNN-style summary, then the largest internal tensors with their offsets and live ranges.
  std::string toText(size_t max_tensor_rows = 10) const;
};

// Weights as the NPU stores them (see the header comment), one row per stored copy.
std::vector<WeightRow> weightMemory(const Graph& graph, const quant::QuantPlan* quant_plan,
                                    const SocProfile& soc, const PartitionReport& placement);

// A report from its parts; the blob sizes describe the blob the model was (or would be) written
// to (other = blob_bytes - the two weight sections). `placement` decides which weights are stored
// for the NPU and which at host size (the build's partition, op_target included).
MemoryReport memoryReport(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                          const PartitionReport& placement, NpuMemoryPlan plan, uint64_t blob_bytes,
                          uint64_t blob_weight_section_bytes, uint64_t blob_packed_weight_section_bytes = 0);
// Same with the SoC's default partition (no op_target).
MemoryReport memoryReport(const Graph& graph, const quant::QuantPlan* quant_plan, const SocProfile& soc,
                          NpuMemoryPlan plan, uint64_t blob_bytes, uint64_t blob_weight_section_bytes,
                          uint64_t blob_packed_weight_section_bytes = 0);

}  // namespace npuc::memory
