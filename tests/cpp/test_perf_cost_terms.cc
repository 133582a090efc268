// The cost terms beyond convs (docs/perf_model.md): op classes on the vector unit, fused LUT
// activations, normalizing ops that spill past the on-chip buffer, MatMul with two activation
// operands, small-Cin packing and the structural constants' overrides.
#include <gtest/gtest.h>

#include "common/error.h"
#include "perf/cost_model.h"
#include "perf/perf_eval.h"
#include "perf_test_util.h"

namespace npuc::perf {
namespace {

using testing::PerfGraph;

// One single-op graph over `shape`, costed on one RK3588 core in int8; returns the op's row.
PerfRow costOneOp(const std::string& op_type, const Shape& shape, Attributes attrs = {},
                  Shape out_shape = {}) {
  PerfGraph p;
  Value* x = p.input("x", shape);
  Node* n = p.op(op_type, "op", {x});
  n->attrs() = std::move(attrs);
  if (!out_shape.empty()) n->output()->setType(DType::Float32, out_shape);
  p.g.addOutput(n->output());
  PerfOptions o;
  o.single_core_mode = true;
  PerfReport r = evaluatePerf(p.g, socProfile("rk3588"), o);
  EXPECT_EQ(r.rows.size(), 1u);
  return r.rows.at(0);
}

TEST(PerfCostTerms, OpClassesOrderTheVectorUnitsRate) {
  CostModel m(socProfile("rk3588"), NpuDType::Int8, 1);
  EXPECT_DOUBLE_EQ(m.vectorCycles(StreamClass::Elementwise), 1.0);
  EXPECT_GT(m.vectorCycles(StreamClass::DataMovement), m.vectorCycles(StreamClass::Elementwise));
  EXPECT_GT(m.vectorCycles(StreamClass::Transpose), m.vectorCycles(StreamClass::DataMovement));
  EXPECT_GT(m.vectorCycles(StreamClass::Lut), m.vectorCycles(StreamClass::Elementwise));
  EXPECT_EQ(streamClass("Transpose"), StreamClass::Transpose);
  EXPECT_EQ(streamClass("Concat"), StreamClass::DataMovement);
  EXPECT_EQ(streamClass("Resize"), StreamClass::DataMovement);
  EXPECT_EQ(streamClass("Sigmoid"), StreamClass::Lut);
  EXPECT_EQ(streamClass("SiLU"), StreamClass::Lut);
  EXPECT_EQ(streamClass("Softmax"), StreamClass::Normalize);
  EXPECT_EQ(streamClass("LayerNormalization"), StreamClass::Normalize);
  EXPECT_EQ(streamClass("Relu"), StreamClass::Elementwise);
  EXPECT_EQ(streamClass("MaxPool"), StreamClass::Pool);
}

TEST(PerfCostTerms, TransposeOfATensorCostsMoreThanARelu) {
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
  PerfRow relu = costOneOp("Relu", {1, 64, 80, 80});
  PerfRow transpose = costOneOp("Transpose", {1, 64, 80, 80}, perm);
  // Same bytes in and out; the transpose is slower per vector.
  EXPECT_DOUBLE_EQ(relu.rw_kb, transpose.rw_kb);
  EXPECT_GT(transpose.npu_cycles, 4 * relu.npu_cycles);
  EXPECT_GT(transpose.total_cycles, relu.total_cycles);
}

TEST(PerfCostTerms, ResizeCostRisesWithItsOutput) {
  Attributes nearest;
  nearest.set("mode", std::string("nearest"));
  PerfRow x2 = costOneOp("Resize", {1, 64, 40, 40}, nearest, {1, 64, 80, 80});
  PerfRow x4 = costOneOp("Resize", {1, 64, 40, 40}, nearest, {1, 64, 160, 160});
  EXPECT_NEAR(x4.npu_cycles, 4 * x2.npu_cycles, 1e-9 * x4.npu_cycles);
  EXPECT_GT(x4.total_cycles, 3 * x2.total_cycles);
}

TEST(PerfCostTerms, NormalizingOpsRereadTensorsThatExceedTheBuffer) {
  const SocProfile& soc = socProfile("rk3588");
  CostModel m(soc, NpuDType::Float16, 1);
  const double buffer = static_cast<double>(soc.npu.onchip_buffer_bytes);
  const double passes = m.constants().normalize_passes;
  // Fits: the input is read once (the task's own bytes); exceeds: once more per further pass.
  TaskCost fits = m.streamTask(1000, 3000, StreamClass::Normalize, NpuDType::Float16, buffer / 2);
  TaskCost spills = m.streamTask(1000, 3000, StreamClass::Normalize, NpuDType::Float16, 2 * buffer);
  EXPECT_DOUBLE_EQ(fits.ddr_bytes, 3000);
  EXPECT_DOUBLE_EQ(spills.ddr_bytes, 3000 + (passes - 1) * 2 * buffer);
  // A single-pass op never re-reads.
  EXPECT_DOUBLE_EQ(
      m.streamTask(1000, 3000, StreamClass::DataMovement, NpuDType::Float16, 2 * buffer).ddr_bytes, 3000);
  // Through eval_perf: a Softmax over 4 MB moves more bytes per element than one over 64 KB.
  Attributes axis;
  axis.set("axis", int64_t{-1});
  PerfRow small = costOneOp("Softmax", {1, 16, 32, 64}, axis);
  PerfRow big = costOneOp("Softmax", {1, 16, 256, 512}, axis);
  EXPECT_GT(big.rw_kb / (256.0 * 512), 1.5 * small.rw_kb / (32.0 * 64));
  // And it costs more than a LUT activation of the same tensor: several passes.
  PerfRow sigmoid = costOneOp("Sigmoid", {1, 16, 256, 512});
  EXPECT_GT(big.npu_cycles, sigmoid.npu_cycles);
}

TEST(PerfCostTerms, FusedLutActivationBoundsAOneByOneConv) {
  CostModel m(socProfile("rk3588"), NpuDType::Int8, 1);
  MacOpShape s;
  s.op_type = "Conv";
  s.in_c = 32;
  s.out_c = 64;
  s.in_h = s.in_w = s.out_h = s.out_w = 80;
  Tiling t{64, 80, false};
  TaskCost relu = m.macTask(s, t, NpuDType::Int8);
  TaskCost silu = m.macTask(s, t, NpuDType::Int8, 0, true);
  // 6400 pixels x 64 out x 32 in / 1024 = 12800 array cycles; the output stage: 6400 x 64 / 32
  // vectors x lut_cycles_per_vector.
  EXPECT_DOUBLE_EQ(relu.compute_cycles, 12800);
  EXPECT_DOUBLE_EQ(silu.compute_cycles, std::max(12800.0, 12800 * m.constants().lut_cycles_per_vector));
  EXPECT_DOUBLE_EQ(silu.ddr_bytes, relu.ddr_bytes);
  // Through eval_perf: Conv+Sigmoid costs more than Conv+Relu of the same conv.
  auto fused = [](const std::string& act) {
    PerfGraph p;
    Node* c = p.conv("c", p.input("x", {1, 32, 80, 80}), 64);
    p.g.addOutput(p.op(act, "act", {c->output()})->output());
    PerfOptions o;
    o.single_core_mode = true;
    return evaluatePerf(p.g, socProfile("rk3588"), o);
  };
  PerfReport r = fused("Relu"), s2 = fused("Sigmoid");
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_EQ(s2.rows.size(), 1u);
  EXPECT_EQ(s2.rows[0].op_type, "Conv+Sigmoid");
  EXPECT_GT(s2.rows[0].npu_cycles, r.rows[0].npu_cycles);
}

TEST(PerfCostTerms, MatMulOfTwoActivationsPaysTheRelayoutOfB) {
  auto matmul = [](bool constant_b) {
    PerfGraph p;
    Value* a = p.input("a", {1, 4, 196, 64});
    Value* b = constant_b ? p.g.addConstant(Tensor(DType::Float32, {1, 4, 64, 196}), "b")
                          : p.input("b", {1, 4, 64, 196});
    Node* n = p.g.appendNode("MatMul", {a, b}, 1, "mm");
    n->output()->setType(DType::Float32, {1, 4, 196, 196});
    p.g.addOutput(n->output());
    PerfOptions o;
    o.single_core_mode = true;
    return evaluatePerf(p.g, socProfile("rk3588"), o);
  };
  PerfReport weights = matmul(true), activations = matmul(false);
  ASSERT_EQ(activations.rows.size(), 1u);
  EXPECT_GT(activations.rows[0].npu_cycles, weights.rows[0].npu_cycles);
  EXPECT_GT(activations.rows[0].rw_kb, weights.rows[0].rw_kb);
  EXPECT_GT(activations.rows[0].total_cycles, weights.rows[0].total_cycles);
}

TEST(PerfCostTerms, SmallInputChannelsPackKernelColumns) {
  MacOpShape stem;
  stem.op_type = "Conv";
  stem.in_c = 3;
  stem.out_c = 32;
  stem.kernel_h = stem.kernel_w = 3;
  stem.in_h = stem.in_w = 16;
  stem.out_h = stem.out_w = 16;
  CostConstants packed, padded;
  padded.pack_small_cin = 0;
  CostModel a(socProfile("rk3588"), NpuDType::Int8, 1, packed),
      b(socProfile("rk3588"), NpuDType::Int8, 1, padded);
  // Packed: 3 rows of (3 taps x 3 channels -> 32 lanes); padded: 9 taps x 32 lanes.
  EXPECT_EQ(a.padded(stem, NpuDType::Int8).lanes_per_oc, 3 * 32);
  EXPECT_EQ(b.padded(stem, NpuDType::Int8).lanes_per_oc, 9 * 32);
  Tiling t{32, 16, false};
  EXPECT_DOUBLE_EQ(b.macTask(stem, t, NpuDType::Int8).compute_cycles,
                   3 * a.macTask(stem, t, NpuDType::Int8).compute_cycles);
  // Wide inputs are unchanged: 64 channels already fill the lanes per tap.
  stem.in_c = 64;
  EXPECT_EQ(a.padded(stem, NpuDType::Int8).lanes_per_oc, 9 * 64);
}

TEST(PerfCostTerms, ConstantsAreSetByNameOnly) {
  CostConstants c;
  c.set("move_cycles_per_vector", 2.5);
  EXPECT_DOUBLE_EQ(c.move_cycles_per_vector, 2.5);
  EXPECT_THROW(c.set("no_such_constant", 1.0), ConfigError);
  EXPECT_THROW(c.set("lut_cycles_per_vector", -1.0), ConfigError);
  EXPECT_THROW(c.set("pack_small_cin", 0.5), ConfigError);
  CostConstants d;
  EXPECT_NE(c.signature(), d.signature());  // the tiling cache key changes with them
}

}  // namespace
}  // namespace npuc::perf
