// eval_perf and eval_memory of issue #17's dtypes, on hand-made plans (dtype_plan_util.h): the a16
// schemes run their MACs at the profile's 16-bit rate with 2-byte activations, w4a16 reads half a
// byte per weight plus its group multipliers, and eval_memory's weight bytes are the blob's.
#include <gtest/gtest.h>

#include "compile/compiled_model.h"
#include "compile/compiled_reports.h"
#include "dtype_plan_util.h"
#include "perf/cost_model.h"
#include "perf/mac_shape.h"
#include "perf/tiling.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

using quant::QuantScheme;
using quant::SchemeDType;

// x [1, 256, 28, 28] -> Conv 3x3 256 -> 256 (+bias): 462 M MACs, compute-bound on rk3588 in every
// dtype; every channel count is a multiple of each alignment, so no dtype pads more than another.
std::shared_ptr<Graph> macBoundGraph() {
  auto g = std::make_shared<Graph>();
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.f, 0.05f);
  auto random = [&](Shape s) {
    Tensor t(DType::Float32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  Value* x = g->addInput("x", DType::Float32, {1, 256, 28, 28});
  Node* c = g->appendNode(
      "Conv", {x, g->addConstant(random({256, 256, 3, 3}), "w"), g->addConstant(random({256}), "b")}, 1,
      "conv");
  c->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  c->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  c->output()->setType(DType::Float32, {1, 256, 28, 28});
  g->addOutput(c->output());
  return g;
}

CompiledModel compiledWith(const std::shared_ptr<Graph>& g, const QuantScheme& scheme, const std::string& soc,
                           quant::QuantPlan& plan) {
  if (scheme.weight_group > 0) testing::zeroGroupsWithMultipliers(*g, scheme.weight_group);
  plan = testing::handPlan(*g, testing::calibratedPlan(*g), scheme);
  return compileModel(g, &plan, testing::dtypeTestSoc(soc), testing::quantizedOptions(scheme));
}

struct Costed {
  perf::PerfRow row;
  perf::PerfReport report;
};

Costed costOf(const QuantScheme& scheme, const std::string& soc = "rk3588") {
  quant::QuantPlan plan;
  const CompiledModel m = compiledWith(macBoundGraph(), scheme, soc, plan);
  perf::PerfReport r = compiledPerf(m);
  for (const perf::PerfRow& row : r.rows)
    if (row.op_type.rfind("Conv", 0) == 0) return {row, r};
  throw Error("no Conv row");
}

TEST(PerfDtypes, A16SchemesRunAtThe16BitRate) {
  const SocProfile& soc = socProfile("rk3588");
  const Costed w8a8 = costOf(QuantScheme{});
  const Costed w8a16 = costOf(QuantScheme::of(SchemeDType::W8A16));
  const Costed w16 = costOf(QuantScheme::of(SchemeDType::W16A16I));
  const Costed w4a16 = costOf(QuantScheme::of(SchemeDType::W4A16, 128));
  EXPECT_EQ(w8a8.row.data_type, "INT8");
  EXPECT_EQ(w8a16.row.data_type, "INT16");
  EXPECT_EQ(w8a8.report.dtype, "int8");
  EXPECT_EQ(w4a16.report.dtype, "int16 (w4a16 group128)");
  EXPECT_EQ(w8a8.row.bottleneck, "NPU");
  const double rate_ratio = static_cast<double>(soc.macsPerCycle(NpuDType::Int8)) /
                            static_cast<double>(soc.macsPerCycle(NpuDType::Int16));  // 1024 / 256
  EXPECT_DOUBLE_EQ(w8a16.row.npu_cycles / w8a8.row.npu_cycles, rate_ratio);
  EXPECT_DOUBLE_EQ(w16.row.npu_cycles, w8a16.row.npu_cycles);
  EXPECT_DOUBLE_EQ(w4a16.row.npu_cycles, w8a16.row.npu_cycles);
  // The layer is compute-bound in both: its time is the compute plus the same task overhead, so it
  // follows the rate.
  EXPECT_EQ(w8a16.row.bottleneck, "NPU");
  EXPECT_DOUBLE_EQ(w8a16.row.total_cycles - w8a16.row.npu_cycles,
                   w8a8.row.total_cycles - w8a8.row.npu_cycles);
  // The bytes each dtype moves are compared at one tiling below: the rows' tilings differ (each
  // minimizes its own time, and a compute-bound layer hides re-reads under its compute).
}

// With one tile (weights read once) the weight bytes per dtype are exact: 1, 2 and 0.5 + 1/128
// bytes a weight, 8-byte biases for every a16 scheme.
TEST(PerfDtypes, WeightBytesPerSchemeWithOneTile) {
  const SocProfile& soc = socProfile("rk3588");
  const auto g = macBoundGraph();
  const perf::MacOpShape shape = perf::macOpShape(*g->findNode("conv"));
  auto ddr = [&](const QuantScheme& s) {
    perf::CostModel m(soc, NpuDType::Int16, 3);
    m.setWeightFormat(perf::WeightFormat::of(s));
    return m.macTask(shape, perf::Tiling{256, 28, false}, NpuDType::Int16).ddr_bytes;
  };
  const double weights = 256.0 * 256 * 9;
  const double w8a16 = ddr(QuantScheme::of(SchemeDType::W8A16));
  // int16 activations: the input and output (256 x 28 x 28 each) take a byte more per element.
  perf::CostModel int8(soc, NpuDType::Int8, 3);
  const double w8a8 = int8.macTask(shape, perf::Tiling{256, 28, false}, NpuDType::Int8).ddr_bytes;
  EXPECT_GE(w8a16 - w8a8, 2.0 * 256 * 28 * 28);
  EXPECT_DOUBLE_EQ(ddr(QuantScheme::of(SchemeDType::W16A16I)) - w8a16, weights * (2 - 1));
  EXPECT_DOUBLE_EQ(w8a16 - ddr(QuantScheme::of(SchemeDType::W4A16, 128)), weights * (1 - (0.5 + 1.0 / 128)));
  EXPECT_DOUBLE_EQ(
      ddr(QuantScheme::of(SchemeDType::W4A16, 32)) - ddr(QuantScheme::of(SchemeDType::W4A16, 128)),
      weights * (1.0 / 32 - 1.0 / 128));
}

TEST(PerfDtypes, W8a8WeightFormatChangesNothing) {
  const SocProfile& soc = socProfile("rk3588");
  perf::CostModel plain(soc, NpuDType::Int8, 3), with(soc, NpuDType::Int8, 3);
  with.setWeightFormat(perf::WeightFormat::of(QuantScheme{}));
  const auto g = macBoundGraph();
  const perf::MacOpShape shape = perf::macOpShape(*g->findNode("conv"));
  const perf::Tiling t = perf::chooseTiling(plain, shape, NpuDType::Int8, nullptr).tiling;
  const perf::TaskCost a = plain.macTask(shape, t, NpuDType::Int8),
                       b = with.macTask(shape, t, NpuDType::Int8);
  EXPECT_EQ(a.ddr_bytes, b.ddr_bytes);
  EXPECT_EQ(a.total(), b.total());
  EXPECT_EQ(plain.tileBufferBytes(shape, t, NpuDType::Int8), with.tileBufferBytes(shape, t, NpuDType::Int8));
  // The fp16 tasks of a hybrid w8a16 build keep 2-byte weights and int32 biases.
  perf::CostModel hybrid(soc, NpuDType::Float16, 3);
  hybrid.setWeightFormat(perf::WeightFormat::of(QuantScheme::of(SchemeDType::W4A16, 32)));
  EXPECT_EQ(hybrid.weightBytes(NpuDType::Float16), 2.0);
  EXPECT_EQ(hybrid.weightBytes(NpuDType::Int16), 0.5 + 1.0 / 32);
  EXPECT_EQ(hybrid.biasBytes(NpuDType::Int16), 8);
}

TEST(MemoryDtypes, WeightBytesPerDtypeAreTheBlobs) {
  const struct {
    QuantScheme scheme;
    uint64_t c1_w, c1_b;
    const char* dtype;
  } cases[] = {
      {QuantScheme{}, 2048, 128, "int8"},                                 // [32, 64]: 1 byte, int32 bias
      {QuantScheme::of(SchemeDType::W8A16), 2048, 256, "int8"},           // int64 bias
      {QuantScheme::of(SchemeDType::W16A16I), 4096, 256, "int16"},        // 2 bytes
      {QuantScheme::of(SchemeDType::W4A16, 32), 1024 + 64, 256, "int4"},  // nibbles + 32 x 2 multipliers
  };
  for (const auto& c : cases) {
    const std::string what = quant::describeScheme(c.scheme);
    quant::QuantPlan plan;
    const CompiledModel m = compiledWith(testing::dtypeTestGraph(), c.scheme, "rk3588", plan);
    const memory::MemoryReport r = compiledMemory(m);
    EXPECT_EQ(r.mode, c.scheme.dtype == SchemeDType::W8A8 ? "int8" : quant::schemeDTypeName(c.scheme.dtype))
        << what;
    uint64_t w = 0, b = 0;
    int bits = 0;
    for (const memory::WeightRow& row : r.weights) {
      if (row.format != memory::BufferFormat::Npu) continue;
      if (row.value == "c1_w") w = row.bytes, bits = row.element_bits;
      if (row.value == "c1_b") b = row.bytes;
    }
    EXPECT_EQ(w, c.c1_w) << what;
    EXPECT_EQ(b, c.c1_b) << what;
    EXPECT_EQ(bits, std::string(c.dtype) == "int4" ? 4 : std::string(c.dtype) == "int16" ? 16 : 8) << what;
    // The blob's NWGT entry of c1's weight has the same size (64-byte aligned).
    for (const lower::Task& t : m.program->tasks) {
      if (t.nodes.empty() || m.graph->nodeList().at(t.nodes.front())->name() != "c1") continue;
      EXPECT_EQ((t.weights.size + 63) / 64 * 64, c.c1_w) << what;
    }
    // int16 activations: the arena holds twice the int8 bytes.
    if (c.scheme.activation_bits == 16) {
      quant::QuantPlan p8;
      const CompiledModel m8 = compiledWith(testing::dtypeTestGraph(), QuantScheme{}, "rk3588", p8);
      EXPECT_GT(r.io_bytes + r.arena_bytes, compiledMemory(m8).io_bytes + compiledMemory(m8).arena_bytes)
          << what;
    }
  }
}

}  // namespace
}  // namespace npuc

namespace npuc {
namespace {

// The table of docs/perf_model.md "Quantized dtypes" (run with --gtest_also_run_disabled_tests):
// predicted FPS and memory per dtype on the SoCs that have it, with hand-made plans
// (dtype_plan_util.h) on the shared models.
TEST(PerfDtypes, DISABLED_PrintTable) {
  struct Row {
    const char* soc;
    std::vector<QuantScheme> schemes;
  };
  const std::vector<Row> rows = {
      {"rk3588",
       {QuantScheme{}, QuantScheme::of(SchemeDType::W8A16), QuantScheme::of(SchemeDType::W16A16I),
        QuantScheme::of(SchemeDType::W4A16, 128)}},
      {"rk3576", {QuantScheme{}, QuantScheme::of(SchemeDType::W4A16, 128)}},
      {"rk3562", {QuantScheme{}, QuantScheme::of(SchemeDType::W8A16)}},
      {"rv1106", {QuantScheme{}, QuantScheme::of(SchemeDType::W16A16I)}},
  };
  for (const char* file : {"mobilenet_v2.onnx", "ppocrv4_det.onnx"}) {
    for (const Row& r : rows) {
      for (const QuantScheme& s : r.schemes) {
        std::shared_ptr<Graph> g = testing::optimizedSharedModel(file);
        if (!g) GTEST_SKIP() << "shared models absent";
        quant::QuantPlan plan;
        try {
          const CompiledModel m = compiledWith(g, s, r.soc, plan);
          const perf::PerfReport p = compiledPerf(m);
          const memory::MemoryReport mem = compiledMemory(m);
          std::printf("| %s | %s | %s | %.1f | %.2f | %.2f | %.2f |\n", file, r.soc,
                      quant::describeScheme(s).c_str(), p.summary.fps, p.summary.ddr_bytes_per_frame / 1e6,
                      mem.weight_bytes / 1e6, mem.total_bytes / 1e6);
        } catch (const std::exception& e) {
          std::printf("| %s | %s | %s | error: %s |\n", file, r.soc, quant::describeScheme(s).c_str(),
                      e.what());
        }
      }
    }
  }
}

}  // namespace
}  // namespace npuc
