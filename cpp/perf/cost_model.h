// npuc's NPU cost model (docs/perf_model.md), in the spirit of Arm's Vela: every figure comes from
// the SocProfile, plus a few structural constants below, each an assumption stated where defined.
//
//   MAC task (Conv / Gemm / MatMul, with its fused activation and Add):
//     compute = padded MACs / (MACs per cycle per core * cores)
//       padded MACs: Cin/Cout padded to the profile's alignment for the dtype (wasted MACs count);
//       a depthwise conv keeps one lane of the conv_in-wide dot product busy; each spatial tile's
//       output pixels are padded to a 4-wide row and a 16-pixel pass.
//     DDR     = bytes the tiles move / (ddr_bytes_per_cycle * ddr_efficiency)
//       weights re-fetched per spatial tile unless the loop keeps them on chip, inputs (with halo)
//       re-fetched per output-channel block unless the loop keeps them, outputs written once.
//     total   = max(compute, DDR) + task_overhead_cycles
//     A fused LUT activation (SiLU, Sigmoid, ...) makes the output stage a floor of the compute.
//   Streaming task (elementwise, pooling, data movement): channel vectors x the op class's cycles
//     per vector (CostConstants) against DDR bytes; normalizing ops make several passes, each
//     re-reading DDR when the tensor exceeds the on-chip buffer.
//   CPU op: max(FLOPs / fp32_gflops, bytes / mem_bandwidth); NPU<->CPU hand-over: one task's
//     sync, plus the CPU converting layout (NC1HWC2 <-> NCHW) and dtype of the tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "perf/cost_constants.h"
#include "perf/mac_shape.h"
#include "perf/op_classes.h"
#include "quant/quant_scheme.h"
#include "target/soc_profile.h"

namespace npuc::perf {

// Output pixels the MAC array processes in one pass. Assumed: DESIGN.md publishes that conv
// utilization drops when the output H*W < 16, which is what a 16-pixel pass does.
constexpr int64_t kPixelsPerPass = 16;
// Row width granularity. Published: when H*W > 1 the width is best 4-aligned.
constexpr int64_t kWidthAlignment = 4;
// CPU FLOPs per element of a transcendental op (Exp, Sigmoid, ...): a polynomial evaluation.
// Assumed.
constexpr double kTranscendentalFlops = 10.0;
// Bytes of a bias element (int32 for int8, also charged for fp16: the NPU keeps 32-bit bias).
constexpr int64_t kBiasBytes = 4;

int64_t roundUp(int64_t x, int64_t multiple);
int64_t ceilDiv(int64_t a, int64_t b);
// Bytes of one element of `t` ("tf32" counts 4).
int64_t npuDTypeBytes(NpuDType t);

// How a MAC op is split into tiles: output channels in blocks of `oc_block` (padded channels),
// output rows in bands of `tile_rows` (full width: wide-and-short tiles read DDR best). With
// `spatial_outer` the band loop is outside (inputs read once, weights once per band); otherwise
// the channel-block loop is (weights read once, inputs once per block).
struct Tiling {
  int64_t oc_block = 0;
  int64_t tile_rows = 0;
  bool spatial_outer = false;
};

struct TaskCost {
  double compute_cycles = 0;  // NPU array / lane cycles
  double ddr_cycles = 0;
  double overhead_cycles = 0;
  double ddr_bytes = 0;
  int64_t tiles = 1;
  double total() const {
    return (compute_cycles > ddr_cycles ? compute_cycles : ddr_cycles) + overhead_cycles;
  }
};

// Channel padding of a MAC op for one dtype, and the buffer footprint of a tile.
struct PaddedMacShape {
  int64_t in_c_stored = 0;    // input channels as stored in DDR (the "other" alignment)
  int64_t out_c_stored = 0;   // output channels as stored in DDR
  int64_t in_c_compute = 0;   // input channels the array reads for one output-channel block set
  int64_t out_c_compute = 0;  // output channels the array computes (conv_out / depthwise aligned)
  int64_t cin_per_oc = 0;     // array lanes spent per output channel per kernel tap
  int64_t lanes_per_oc = 0;   // array lanes per output channel over the whole kernel (packing)
  int64_t oc_align = 0;       // block granularity of output channels
};

// How a quantized build stores the weights and biases of the MAC tasks computing in `dtype` (the
// scheme's activation type: int8 for w8a8, int16 for the a16 schemes); tasks in another dtype (FP16
// hybrid layers) store theirs in their own dtype. w4a16 weights take half a byte plus one u8 group
// multiplier per `group` elements (assumed: RKNN publishes no w4a16 rate or layout, so the array
// is taken to run w4a16 at the 16-bit rate and to read the weights as packed in the blob).
struct WeightFormat {
  NpuDType dtype = NpuDType::Int8;
  int weight_bits = 8;
  int64_t group = 0;                // w4a16's quantized_method group; 0 ungrouped
  int64_t bias_bytes = kBiasBytes;  // int64 biases (every scheme but w8a8) take 8
  // The format of a build quantized with `s`.
  static WeightFormat of(const quant::QuantScheme& s);
  // Weight bytes per element (int4: 0.5 + 1 / group).
  double weightBytes() const;
  std::string signature() const;  // for the tiling cache key
};

class CostModel {
 public:
  // `cores`: NPU cores one task is spread over (1 in single-core mode). ConfigError when the
  // profile does not compute in `dtype` or `cores` is outside 1..npu.cores.
  CostModel(const SocProfile& soc, NpuDType dtype, int64_t cores, const CostConstants& constants = {});

  const SocProfile& soc() const { return *soc_; }
  NpuDType dtype() const { return dtype_; }
  int64_t cores() const { return cores_; }
  const CostConstants& constants() const { return constants_; }
  // A quantized build's weight storage (default: every dtype stores weights in its own size and
  // int32 biases, which is w8a8 and FP16).
  void setWeightFormat(const WeightFormat& f) { weight_format_ = f; }
  const std::optional<WeightFormat>& weightFormat() const { return weight_format_; }
  // Bytes of one weight element / one bias element of a MAC task computing in `t`.
  double weightBytes(NpuDType t) const;
  int64_t biasBytes(NpuDType t) const;
  double clockHz() const { return static_cast<double>(soc_->npu.clock_mhz) * 1e6; }
  double sustainedDdrBytesPerCycle() const {
    return soc_->npu.ddr_bytes_per_cycle * soc_->npu.ddr_efficiency;
  }
  // The whole array's MACs per cycle for `t` over the cores in use.
  double macsPerCycle(NpuDType t) const;

  PaddedMacShape padded(const MacOpShape& s, NpuDType t) const;
  // Bytes one tile keeps on chip (input band incl. halo + weight block + output band).
  int64_t tileBufferBytes(const MacOpShape& s, const Tiling& tiling, NpuDType t) const;
  bool fitsBuffer(const MacOpShape& s, const Tiling& tiling, NpuDType t) const {
    return tileBufferBytes(s, tiling, t) <= soc_->npu.onchip_buffer_bytes;
  }
  // A MAC task; `extra_read_bytes` are the fused Add's other operand. `lut_activation`: a fused
  // LUT activation, whose output stage then bounds the compute from below.
  TaskCost macTask(const MacOpShape& s, const Tiling& tiling, NpuDType t, double extra_read_bytes = 0,
                   bool lut_activation = false) const;
  // Cycles the vector unit spends per channel vector of op class `c` (one pass).
  double vectorCycles(StreamClass c) const;
  // Vector-unit cycles for `elements` (after channel padding) in `t`: elements over the lanes of
  // the cores in use.
  double vectors(double elements, NpuDType t) const;
  // A streaming NPU task of class `c` in `t` processing `elements` (after channel padding),
  // moving `ddr_bytes`. A Normalize op makes CostConstants::normalize_passes passes; when
  // `input_bytes` exceed the on-chip buffer each pass after the first re-reads them from DDR.
  TaskCost streamTask(double elements, double ddr_bytes, StreamClass c, NpuDType t,
                      double input_bytes = 0) const;
  // A MAC op the tiler does not model (ConvTranspose): its MACs over the array, bytes once.
  TaskCost untiledMacTask(double macs, double ddr_bytes, NpuDType t) const;
  // Padding of a tensor's channel dim (dim 1 of rank >= 2) to the "other" alignment, in elements.
  int64_t storedElements(const Shape& shape, NpuDType t) const;

  // Seconds a CPU fallback op takes.
  double cpuSeconds(double flops, double bytes) const;
  // Seconds one NPU<->CPU hand-over of a tensor of `elements` (in NPU dtype `t`) costs.
  double handoverSeconds(double elements, NpuDType t) const;

 private:
  const SocProfile* soc_;
  NpuDType dtype_;
  int64_t cores_;
  CostConstants constants_;
  std::optional<WeightFormat> weight_format_;
};

}  // namespace npuc::perf
