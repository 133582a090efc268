#include "perf/cost_model.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace npuc::perf {

namespace {

// Bytes of the fp32 tensors CPU fallback ops and hand-overs read and write.
constexpr int64_t kCpuElementBytes = 4;
// FLOPs per element to (de)quantize on the CPU: one multiply and one add (or round).
constexpr double kDtypeConversionFlops = 2.0;

}  // namespace

int64_t roundUp(int64_t x, int64_t multiple) {
  return multiple <= 1 ? x : ceilDiv(x, multiple) * multiple;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t npuDTypeBytes(NpuDType t) {
  switch (t) {
    case NpuDType::Int8: return 1;
    case NpuDType::Int16:
    case NpuDType::Float16:
    case NpuDType::BFloat16: return 2;
    case NpuDType::TFloat32: return 4;
  }
  return 1;
}

WeightFormat WeightFormat::of(const quant::QuantScheme& s) {
  WeightFormat f;
  f.dtype = s.activation_bits == 16 ? NpuDType::Int16 : NpuDType::Int8;
  f.weight_bits = s.weight_bits;
  f.group = s.weight_group;
  f.bias_bytes = s.wideAccumulator() ? 8 : kBiasBytes;
  return f;
}

double WeightFormat::weightBytes() const {
  const double bytes = weight_bits / 8.0;
  return group > 0 ? bytes + 1.0 / static_cast<double>(group) : bytes;
}

std::string WeightFormat::signature() const {
  return std::string(npuDTypeName(dtype)) + ":w" + std::to_string(weight_bits) + "g" + std::to_string(group) +
         "b" + std::to_string(bias_bytes);
}

double CostModel::weightBytes(NpuDType t) const {
  if (weight_format_ && weight_format_->dtype == t) return weight_format_->weightBytes();
  return static_cast<double>(npuDTypeBytes(t));
}

int64_t CostModel::biasBytes(NpuDType t) const {
  return weight_format_ && weight_format_->dtype == t ? weight_format_->bias_bytes : kBiasBytes;
}

CostModel::CostModel(const SocProfile& soc, NpuDType dtype, int64_t cores, const CostConstants& constants)
    : soc_(&soc), dtype_(dtype), cores_(cores), constants_(constants) {
  if (!soc.supportsDtype(dtype))
    throw ConfigError(soc.name + ": the NPU does not compute in " + std::string(npuDTypeName(dtype)));
  if (cores < 1 || cores > soc.npu.cores)
    throw ConfigError(soc.name + ": " + std::to_string(cores) + " NPU cores requested, the SoC has " +
                      std::to_string(soc.npu.cores));
}

double CostModel::macsPerCycle(NpuDType t) const {
  return static_cast<double>(soc_->macsPerCycle(t)) * static_cast<double>(cores_);
}

PaddedMacShape CostModel::padded(const MacOpShape& s, NpuDType t) const {
  PaddedMacShape p;
  int64_t other = soc_->alignment(t, AlignmentRole::Other);
  int64_t conv_in = soc_->alignment(t, AlignmentRole::ConvInput);
  p.in_c_stored = roundUp(s.in_c, other);
  p.out_c_stored = roundUp(s.out_c, other);
  if (s.depthwise) {
    // One filter per channel: a channel block reads only its own input channels, and each output
    // channel keeps one lane of the conv_in-wide dot product busy.
    p.oc_align = soc_->alignment(t, AlignmentRole::Depthwise);
    p.out_c_compute = roundUp(s.out_c, p.oc_align);
    p.in_c_compute = p.out_c_compute;
    p.cin_per_oc = conv_in;
  } else {
    int64_t cin_group = roundUp(s.in_c / s.group, conv_in);
    int64_t cout_group = roundUp(s.out_c / s.group, soc_->alignment(t, AlignmentRole::ConvOutput));
    p.in_c_compute = cin_group * s.group;
    p.out_c_compute = cout_group * s.group;
    p.cin_per_oc = cin_group;
    // Blocks hold whole groups of a grouped conv.
    p.oc_align = s.group == 1 ? soc_->alignment(t, AlignmentRole::ConvOutput) : cout_group;
  }
  p.lanes_per_oc = s.kernel_h * s.kernel_w * p.cin_per_oc;
  // Few input channels (an RGB stem): a row of KW taps x Cin channels fills the lanes together
  // instead of each tap's Cin padding to conv_in on its own (CostConstants::pack_small_cin).
  if (constants_.pack_small_cin > 0 && !s.depthwise && s.group == 1 && s.in_c < conv_in)
    p.lanes_per_oc = std::min(p.lanes_per_oc, s.kernel_h * roundUp(s.kernel_w * s.in_c, conv_in));
  return p;
}

namespace {

// Input channels one output-channel block reads: all of them for an ordinary conv, only the
// block's own groups for grouped and depthwise convs.
int64_t inputChannelsPerBlock(const MacOpShape& s, const PaddedMacShape& p, int64_t oc_block) {
  if (s.group == 1 && !s.depthwise) return p.in_c_compute;
  return std::max<int64_t>(1, p.in_c_compute * std::min(oc_block, p.out_c_compute) / p.out_c_compute);
}

// Weight elements stored per output channel (a depthwise filter has one input channel).
int64_t weightElementsPerOc(const MacOpShape& s, const PaddedMacShape& p) {
  return s.kernel_h * s.kernel_w * (s.depthwise ? 1 : p.cin_per_oc);
}

// Output pixels of one band of `rows` rows after row-width and pass padding.
int64_t paddedBandPixels(const MacOpShape& s, int64_t rows) {
  int64_t width = s.out_h * s.out_w > 1 ? roundUp(s.out_w, kWidthAlignment) : s.out_w;
  return roundUp(rows * width, kPixelsPerPass);
}

}  // namespace

int64_t CostModel::tileBufferBytes(const MacOpShape& s, const Tiling& tiling, NpuDType t) const {
  PaddedMacShape p = padded(s, t);
  int64_t b = npuDTypeBytes(t);
  int64_t input = s.inputRows(tiling.tile_rows) * s.in_w * inputChannelsPerBlock(s, p, tiling.oc_block) * b;
  const auto weights = static_cast<int64_t>(std::ceil(
      static_cast<double>(tiling.oc_block) *
      (static_cast<double>(weightElementsPerOc(s, p)) * weightBytes(t) + (s.has_bias ? biasBytes(t) : 0))));
  int64_t output = tiling.tile_rows * s.out_w * tiling.oc_block * b;
  return input + weights + output;
}

TaskCost CostModel::macTask(const MacOpShape& s, const Tiling& tiling, NpuDType t, double extra_read_bytes,
                            bool lut_activation) const {
  PaddedMacShape p = padded(s, t);
  const double b = static_cast<double>(npuDTypeBytes(t));
  const int64_t oc_tiles = ceilDiv(p.out_c_compute, tiling.oc_block);
  const int64_t bands = ceilDiv(s.out_h, tiling.tile_rows);
  const int64_t last_rows = s.out_h - (bands - 1) * tiling.tile_rows;

  // Compute: every band's padded pixels times every padded output channel's lanes.
  double pixels = static_cast<double>((bands - 1) * paddedBandPixels(s, tiling.tile_rows) +
                                      paddedBandPixels(s, last_rows)) *
                  static_cast<double>(s.batch);
  double array_macs = pixels * static_cast<double>(p.out_c_compute * p.lanes_per_oc);

  // DDR: input bands with their halo, weights, outputs once.
  double input_once =
      static_cast<double>((bands - 1) * s.inputRows(tiling.tile_rows) + s.inputRows(last_rows)) *
      static_cast<double>(s.in_w * p.in_c_stored * s.batch) * b;
  double weights_once = static_cast<double>(p.out_c_compute) *
                        (static_cast<double>(weightElementsPerOc(s, p)) * weightBytes(t) +
                         static_cast<double>(s.has_bias ? biasBytes(t) : 0));
  bool refetch_inputs = oc_tiles > 1 && !tiling.spatial_outer && s.group == 1 && !s.depthwise;
  bool refetch_weights = oc_tiles > 1 && tiling.spatial_outer;
  double input_bytes = input_once * (refetch_inputs ? static_cast<double>(oc_tiles) : 1.0);
  double weight_bytes = weights_once * (refetch_weights ? static_cast<double>(bands * s.batch) : 1.0);
  double output_bytes = static_cast<double>(s.batch * s.out_h * s.out_w * p.out_c_stored) * b;

  TaskCost c;
  c.compute_cycles = array_macs / macsPerCycle(t);
  if (!s.depthwise && s.in_c / s.group > kDeepCinThreshold)
    c.compute_cycles /= constants_.deep_cin_efficiency;
  // The output stage applies a LUT activation at its own rate; the array waits for it when the
  // conv produces outputs faster (1x1 convs, few input channels).
  if (lut_activation) {
    double out_elements = static_cast<double>(s.batch * s.out_h * s.out_w * p.out_c_stored);
    c.compute_cycles =
        std::max(c.compute_cycles, vectors(out_elements, t) * constants_.lut_cycles_per_vector);
  }
  c.ddr_bytes = input_bytes + weight_bytes + output_bytes + extra_read_bytes;
  c.ddr_cycles = c.ddr_bytes / sustainedDdrBytesPerCycle();
  c.overhead_cycles = static_cast<double>(soc_->npu.task_overhead_cycles);
  c.tiles = oc_tiles * bands * s.batch;
  return c;
}

double CostModel::vectors(double elements, NpuDType t) const {
  // One conv_out-wide vector per cycle per core. Assumed: the elementwise/LUT unit is the conv's
  // output stage, as wide as the array's output-channel block. (It was the `other` alignment,
  // which gave RK3562 twice RK3566's vector rate; the published yolov8n/mobilenetv2 ratios of the
  // two contradict that, see docs/perf_model.md.)
  return elements / static_cast<double>(soc_->alignment(t, AlignmentRole::ConvOutput) * cores_);
}

double CostModel::vectorCycles(StreamClass c) const {
  switch (c) {
    case StreamClass::Elementwise:
    // A pooling task's work already counts every window tap; each tap is one vector max/add.
    case StreamClass::Pool: return 1.0;
    case StreamClass::DataMovement: return constants_.move_cycles_per_vector;
    case StreamClass::Transpose: return constants_.move_cycles_per_vector * constants_.transpose_factor;
    case StreamClass::Lut: return constants_.lut_cycles_per_vector;
    // Per pass: Softmax's exp and LayerNorm's rsqrt go through the LUT once, the other passes are
    // elementwise; averaged over the passes.
    case StreamClass::Normalize:
      return (constants_.normalize_passes - 1.0 + constants_.lut_cycles_per_vector) /
             constants_.normalize_passes;
  }
  return 1.0;
}

TaskCost CostModel::streamTask(double elements, double ddr_bytes, StreamClass cls, NpuDType t,
                               double input_bytes) const {
  double passes = cls == StreamClass::Normalize ? constants_.normalize_passes : 1.0;
  // A tensor larger than the on-chip buffer cannot stay there between passes: every pass after
  // the first reads it from DDR again.
  if (passes > 1 && input_bytes > static_cast<double>(soc_->npu.onchip_buffer_bytes))
    ddr_bytes += (passes - 1.0) * input_bytes;
  TaskCost c;
  c.compute_cycles = vectors(elements, t) * vectorCycles(cls) * passes;
  c.ddr_bytes = ddr_bytes;
  c.ddr_cycles = ddr_bytes / sustainedDdrBytesPerCycle();
  c.overhead_cycles = static_cast<double>(soc_->npu.task_overhead_cycles);
  return c;
}

TaskCost CostModel::untiledMacTask(double macs, double ddr_bytes, NpuDType t) const {
  TaskCost c;
  c.compute_cycles = macs / macsPerCycle(t);
  c.ddr_bytes = ddr_bytes;
  c.ddr_cycles = ddr_bytes / sustainedDdrBytesPerCycle();
  c.overhead_cycles = static_cast<double>(soc_->npu.task_overhead_cycles);
  return c;
}

int64_t CostModel::storedElements(const Shape& shape, NpuDType t) const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (shape.size() < 2 || shape[1] == 0) return n;
  return n / shape[1] * roundUp(shape[1], soc_->alignment(t, AlignmentRole::Other));
}

double CostModel::cpuSeconds(double flops, double bytes) const {
  return std::max(flops / (soc_->cpu.fp32_gflops * 1e9), bytes / (soc_->cpu.mem_bandwidth_gbps * 1e9));
}

double CostModel::handoverSeconds(double elements, NpuDType t) const {
  // Sync: one more NPU task submission and completion wait (assumed equal to the task overhead).
  double sync = static_cast<double>(soc_->npu.task_overhead_cycles) / clockHz();
  // The CPU reads the NPU tensor and writes the fp32 NCHW one (or the reverse), converting dtype.
  double layout = elements * static_cast<double>(npuDTypeBytes(t) + kCpuElementBytes) /
                  (soc_->cpu.mem_bandwidth_gbps * 1e9);
  double convert = elements * kDtypeConversionFlops / (soc_->cpu.fp32_gflops * 1e9);
  return sync + layout + convert;
}

}  // namespace npuc::perf
