// The cost model on hand-computed cases: a 1x1 conv's cycles derived from the profile numbers,
// channel-padding waste, DDR- vs compute-bound layers, multi-core scaling and CPU hand-overs.
#include <gtest/gtest.h>

#include "perf/cost_model.h"
#include "perf/perf_eval.h"
#include "perf_test_util.h"

namespace npuc::perf {
namespace {

using testing::PerfGraph;

MacOpShape conv1x1(int64_t in_c, int64_t out_c, int64_t hw) {
  MacOpShape s;
  s.op_type = "Conv";
  s.in_c = in_c;
  s.out_c = out_c;
  s.in_h = s.in_w = s.out_h = s.out_w = hw;
  return s;
}

TEST(PerfCostModel, OneByOneConvByHand) {
  const SocProfile& soc = socProfile("rk3588");
  CostModel model(soc, NpuDType::Int8, 1);
  // Conv 1x1, [1,64,8,8] -> [1,64,8,8], int8, one RK3588 core.
  //  Alignment (int8): conv_in 32, conv_out 32, other 16: 64 channels need no padding anywhere.
  //  Tile: all 64 output channels x all 8 rows: input 8*8*64 + weights 64*64 + output 8*8*64
  //  = 12288 B <= 384 KiB, so one tile, nothing re-fetched.
  //  Compute: 64 pixels (8-wide rows are 4-aligned; 64 is a whole number of 16-pixel passes)
  //  * 64 out * 64 in = 262144 MACs / 1024 MACs per cycle = 256 cycles.
  //  DDR: 4096 (input) + 4096 (weights) + 4096 (output) = 12288 B over
  //  ddr_bytes_per_cycle * ddr_efficiency.
  MacOpShape s = conv1x1(64, 64, 8);
  TilingDecision d = chooseTiling(model, s, NpuDType::Int8, nullptr);
  EXPECT_EQ(d.tiling.oc_block, 64);
  EXPECT_EQ(d.tiling.tile_rows, 8);
  TaskCost c = model.macTask(s, d.tiling, NpuDType::Int8);
  const double ddr_rate = soc.npu.ddr_bytes_per_cycle * soc.npu.ddr_efficiency;
  EXPECT_DOUBLE_EQ(c.compute_cycles, 256.0);
  EXPECT_DOUBLE_EQ(c.ddr_bytes, 12288.0);
  EXPECT_DOUBLE_EQ(c.ddr_cycles, 12288.0 / ddr_rate);
  EXPECT_DOUBLE_EQ(c.total(), std::max(256.0, 12288.0 / ddr_rate) + soc.npu.task_overhead_cycles);
  EXPECT_EQ(c.tiles, 1);
}

TEST(PerfCostModel, MisalignedOutputChannelsWasteMacs) {
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 1);
  // Cout 32 is one conv_out block of 32; Cout 33 pads to 64: the array does twice the work
  // for 3% more useful MACs.
  MacOpShape aligned = conv1x1(64, 32, 8), misaligned = conv1x1(64, 33, 8);
  Tiling t{64, 8, false};
  TaskCost a = model.macTask(aligned, {32, 8, false}, NpuDType::Int8);
  TaskCost m = model.macTask(misaligned, t, NpuDType::Int8);
  EXPECT_DOUBLE_EQ(a.compute_cycles, 64.0 * 32 * 64 / 1024);  // 128
  EXPECT_DOUBLE_EQ(m.compute_cycles, 64.0 * 64 * 64 / 1024);  // 256
  EXPECT_EQ(model.padded(misaligned, NpuDType::Int8).out_c_compute, 64);
  // Input channels too: Cin 3 pads to conv_in 32 (the first layer of every CNN).
  EXPECT_EQ(model.padded(conv1x1(3, 32, 8), NpuDType::Int8).cin_per_oc, 32);
  // fp16 aligns conv_out to 16 on RK3588: 33 -> 48.
  EXPECT_EQ(model.padded(misaligned, NpuDType::Float16).out_c_compute, 48);
}

TEST(PerfCostModel, SmallOutputsPayWholePasses) {
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 1);
  // 2x2 output: 2-wide rows pad to 4, 8 pixels pad to one 16-pixel pass: 4x the 4-pixel work.
  MacOpShape s = conv1x1(32, 32, 2);
  TaskCost c = model.macTask(s, {32, 2, false}, NpuDType::Int8);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 16.0 * 32 * 32 / 1024);
}

TEST(PerfCostModel, DdrBoundAndComputeBoundLayers) {
  PerfGraph p;
  Value* x = p.input("x", {1, 64, 56, 56});
  Node* conv3 = p.conv("conv3x3", x, 64, 3);  // 115.6 M MACs on 0.4 MB of tensors
  Value* v = p.input("v", {1, 2048});
  Value* w = p.g.addConstant(Tensor(DType::Float32, {2048, 1000}), "fc_w");
  Node* fc = p.g.appendNode("Gemm", {v, w}, 1, "fc");  // 2 M MACs on 2 MB of weights
  fc->output()->setType(DType::Float32, {1, 1000});
  p.g.addOutput(conv3->output());
  p.g.addOutput(fc->output());
  PerfOptions o;
  o.single_core_mode = true;
  PerfReport r = evaluatePerf(p.g, socProfile("rk3588"), o);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].full_name, "conv3x3");
  EXPECT_EQ(r.rows[0].bottleneck, "NPU");
  EXPECT_GT(r.rows[0].npu_cycles, r.rows[0].ddr_cycles);
  EXPECT_EQ(r.rows[1].full_name, "fc");
  EXPECT_EQ(r.rows[1].bottleneck, "DDR");
  // 2 MB of weights at ~10 B/cycle (~200k cycles) vs one 16-pixel pass over 1024 x 2048 MACs
  // (32768 cycles, over deep_cin_efficiency since K = 2048 > 512): DDR-bound by more than 2x.
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 1);
  EXPECT_DOUBLE_EQ(r.rows[1].npu_cycles, 32768.0 / model.constants().deep_cin_efficiency);
  EXPECT_GT(r.rows[1].ddr_cycles, 2 * r.rows[1].npu_cycles);
  // The DDR-bound layer's weights alone: 1000 outputs pad to 1024, 2048 inputs, 1 B each.
  EXPECT_GE(r.rows[1].rw_kb * 1024, 1024.0 * 2048);
}

// A row costs its task on one core; the core schedule (sched/core_scheduler.h) splits it.
TEST(PerfCostModel, MultiCoreSplitsAConvButRowsCostOneCore) {
  PerfGraph p;
  Value* x = p.input("x", {1, 64, 56, 56});
  p.g.addOutput(p.conv("c", x, 64, 3)->output());
  PerfOptions single, multi;
  single.single_core_mode = true;
  PerfReport one = evaluatePerf(p.g, socProfile("rk3588"), single);
  PerfReport three = evaluatePerf(p.g, socProfile("rk3588"), multi);
  EXPECT_EQ(three.cores, 3);
  EXPECT_DOUBLE_EQ(three.rows[0].npu_cycles, one.rows[0].npu_cycles);
  EXPECT_NE(three.rows[0].split, "whole");
  EXPECT_LT(three.summary.total_time_us, 0.6 * one.summary.total_time_us);
}

TEST(PerfCostModel, CpuFallbackPaysHandovers) {
  PerfGraph p;
  Value* x = p.input("x", {1, 32, 16, 16});
  Node* c1 = p.conv("c1", x, 32);
  Node* relu = p.op("Relu", "relu", {c1->output()});
  Node* c2 = p.conv("c2", relu->output(), 32);
  p.g.addOutput(c2->output());
  PerfOptions o;
  o.op_target = {{"relu", "cpu"}};
  PerfReport r = evaluatePerf(p.g, socProfile("rk3588"), o);
  ASSERT_EQ(r.rows.size(), 3u);  // Conv (Relu not fused: it is on the CPU), Relu, Conv
  EXPECT_EQ(r.rows[1].target, Device::Cpu);
  EXPECT_EQ(r.rows[1].bottleneck, "CPU");
  EXPECT_EQ(r.rows[1].handovers, 1);  // NPU -> CPU
  EXPECT_EQ(r.rows[2].handovers, 1);  // CPU -> NPU
  EXPECT_EQ(r.summary.handovers, 2);
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 3);
  EXPECT_DOUBLE_EQ(r.rows[1].handover_us, model.handoverSeconds(32 * 16 * 16, NpuDType::Int8) * 1e6);
  // Sync alone is one task's overhead.
  EXPECT_GT(r.summary.handover_time_us, 2 * socProfile("rk3588").npu.task_overhead_cycles / 1000.0);
}

TEST(PerfCostModel, RefusesWhatTheSocCannotDo) {
  EXPECT_THROW(CostModel(socProfile("rv1106"), NpuDType::Float16, 1), ConfigError);
  EXPECT_THROW(CostModel(socProfile("rk3588"), NpuDType::Int8, 4), ConfigError);
}

}  // namespace
}  // namespace npuc::perf
