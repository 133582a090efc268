// The program runtime (runtime/program_runtime.h): the lowered program run over the planned arena
// gives the simulator's outputs bit for bit (every shared model, INT8 and FP16; a graph with CPU
// ops and Converts), one arena per concurrent run allocated once, and the arena is really where
// values live (a plan corrupted to overlap two live values changes the outputs). Refusals: a
// buffer too small for its value, a plan for another partition.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "frontend/onnx_import.h"
#include "lower/lower.h"
#include "memory/memory_report.h"
#include "memory/npu_memory_plan.h"
#include "onnx_test_util.h"
#include "passes/optimize.h"
#include "perf_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant_test_util.h"
#include "runtime/half_codec.h"
#include "runtime/program_runtime.h"
#include "runtime/program_runtime_loader.h"
#include "target/soc_profile.h"

namespace npuc::runtime {
namespace {

using ::npuc::testing::calibratedPlan;
using quant::QuantizedExecutor;

// The simulator, program and plan of `g` on `soc` (INT8 with `plan`, FP16 without).
struct Compiled {
  std::shared_ptr<const QuantizedExecutor> sim;
  lower::LoweredProgram program;
  memory::NpuMemoryPlan memory;
};

Compiled compile(const Graph& g, const quant::QuantPlan* plan, const std::string& soc = "rk3588",
                 const OpTargetMap& op_target = {}) {
  Compiled c;
  c.sim = plan ? std::make_shared<const QuantizedExecutor>(g, *plan)
               : std::make_shared<const QuantizedExecutor>(g);
  lower::LowerOptions lo;
  lo.plan = plan;
  lo.op_target = op_target;
  c.program = lower::lowerGraph(g, socProfile(soc), lo);
  c.memory = memory::planNpuMemory(g, plan, socProfile(soc), partitionGraph(g, socProfile(soc), op_target));
  return c;
}

void expectBitEqual(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << what << " output " << i;
}

bool anyDifferent(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].bitwiseEqual(b[i])) return true;
  return false;
}

TEST(ProgramRuntime, EverySharedModelEqualsTheSimulatorBitForBit) {
  for (const char* file : {"mobilenet_v2.onnx", "shufflenet_v2_x0_5.onnx", "tiny_vit.onnx", "glu_net.onnx",
                           "yolo_focus.onnx", "conv_transpose_clip.onnx"}) {
    std::unique_ptr<Graph> g = ::npuc::testing::optimizedSharedModel(file);
    if (!g) NPUC_SKIP_MISSING_DEP("shared models not found");
    const quant::QuantPlan q = calibratedPlan(*g);
    for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
      const std::string what = std::string(file) + (plan ? " int8" : " fp16");
      Compiled c = compile(*g, plan);
      ProgramRuntime rt(c.sim, c.program, c.memory);
      for (uint32_t seed : {1u, 2u}) {  // two runs: the second reuses the first one's arena
        const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(*g, seed);
        expectBitEqual(rt.run(inputs), c.sim->run(inputs), what + " seed " + std::to_string(seed));
      }
      EXPECT_EQ(rt.arenasAllocated(), 1) << what;
      EXPECT_EQ(rt.arenaBytes(), c.memory.arena_bytes) << what;
    }
  }
}

// x -> c1+relu -> c2 -> relu2 (forced to the CPU) -> c3 -> out: host steps and Converts.
TEST(ProgramRuntime, CpuOpsAndConvertsEqualTheSimulator) {
  perf::testing::PerfGraph p;
  Value* x = p.input("x", {1, 16, 8, 8});
  Node* c1 = p.conv("c1", x, 16, 3);
  Node* r1 = p.op("Relu", "r1", {c1->output()});
  Node* c2 = p.conv("c2", r1->output(), 16, 3);
  Node* r2 = p.op("Relu", "r2", {c2->output()});
  Node* c3 = p.conv("c3", r2->output(), 16, 3);
  p.g.addOutput(c3->output());
  p.g.addOutput(c2->output());  // an NPU value that is also read on the host
  const quant::QuantPlan q = calibratedPlan(p.g);
  for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    Compiled c = compile(p.g, plan, "rk3588", {{"r2", "cpu"}});
    int cpu = 0, converts = 0;
    for (const lower::Task& t : c.program.tasks) {
      cpu += t.kind == lower::TaskKind::Cpu;
      converts += t.kind == lower::TaskKind::Convert;
    }
    ASSERT_EQ(cpu, 1);
    ASSERT_GE(converts, 4);
    ProgramRuntime rt(c.sim, c.program, c.memory);
    const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(p.g, 3);
    expectBitEqual(rt.run(inputs), c.sim->run(inputs), plan ? "int8" : "fp16");
  }
}

TEST(ProgramRuntime, ConcurrentRunsEachTakeTheirOwnArena) {
  std::unique_ptr<Graph> g = ::npuc::testing::optimizedSharedModel("glu_net.onnx");
  if (!g) NPUC_SKIP_MISSING_DEP("shared models not found");
  const quant::QuantPlan q = calibratedPlan(*g);
  Compiled c = compile(*g, &q);
  ProgramRuntime rt(c.sim, c.program, c.memory);
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<std::vector<Tensor>> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(::npuc::testing::randomNormalInputs(*g, 10 + t));
    expected.push_back(c.sim->run(inputs.back()));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) mismatches[t] += anyDifferent(rt.run(inputs[t]), expected[t]);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0));
  EXPECT_GE(rt.arenasAllocated(), 1);
  EXPECT_LE(rt.arenasAllocated(), kThreads);
}

// Two arena buffers live at once, the second written while the first still has readers: placing
// the second on top of the first must change the outputs if the runtime really reads the arena.
TEST(ProgramRuntime, OverlappingLiveBuffersInTheArenaChangeTheOutputs) {
  std::unique_ptr<Graph> g = ::npuc::testing::optimizedSharedModel("mobilenet_v2.onnx");
  if (!g) NPUC_SKIP_MISSING_DEP("shared models not found");
  const quant::QuantPlan q = calibratedPlan(*g);
  Compiled c = compile(*g, &q);
  const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(*g, 5);
  const std::vector<Tensor> expected = c.sim->run(inputs);
  ASSERT_EQ(memory::findPlanViolation(c.memory), "");
  expectBitEqual(ProgramRuntime(c.sim, c.program, c.memory).run(inputs), expected, "sound plan");

  int corrupted = 0;
  std::vector<memory::PlannedBuffer>& buffers = c.memory.buffers;
  for (size_t a = 0; a < buffers.size() && corrupted < 3; ++a) {
    for (size_t b = 0; b < buffers.size() && corrupted < 3; ++b) {
      const memory::PlannedBuffer &older = buffers[a], &newer = buffers[b];
      const bool arena = older.home == memory::BufferHome::Arena && newer.home == memory::BufferHome::Arena;
      // `newer` is written while `older` still waits for a reader: a real conflict.
      if (!arena || !(older.first < newer.first && newer.first < older.last)) continue;
      memory::NpuMemoryPlan bad = c.memory;
      bad.buffers[b].offset = older.offset;
      bad.arena_bytes = std::max(bad.arena_bytes, older.offset + newer.bytes);
      ASSERT_NE(memory::findPlanViolation(bad), "");
      const std::vector<Tensor> got = ProgramRuntime(c.sim, c.program, bad).run(inputs);
      EXPECT_TRUE(anyDifferent(got, expected)) << newer.value << " over " << older.value;
      ++corrupted;
    }
  }
  EXPECT_EQ(corrupted, 3) << "mobilenet_v2 should have overlapping-in-time buffers to corrupt";
}

TEST(ProgramRuntime, RefusesABufferTooSmallAndAPlanForAnotherPartition) {
  perf::testing::PerfGraph p;
  Value* x = p.input("x", {1, 16, 8, 8});
  Node* c1 = p.conv("c1", x, 16, 3);
  Node* r2 = p.op("Relu", "r2", {c1->output()});
  Node* c3 = p.conv("c3", r2->output(), 16, 3);
  p.g.addOutput(c3->output());
  Compiled c = compile(p.g, nullptr);
  memory::NpuMemoryPlan small = c.memory;
  for (memory::PlannedBuffer& b : small.buffers)
    if (b.home == memory::BufferHome::Arena) b.bytes = 64;
  try {
    ProgramRuntime(c.sim, c.program, small);
    FAIL() << "a 64-byte buffer for a 1x16x8x8 fp16 tensor was accepted";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 2048 bytes"), std::string::npos) << e.what();
  }
  // The program with r2 on the CPU, the plan for the default partition (all on the NPU).
  lower::LowerOptions lo;
  lo.op_target = {{"r2", "cpu"}};
  const lower::LoweredProgram moved = lower::lowerGraph(p.g, socProfile("rk3588"), lo);
  EXPECT_THROW(ProgramRuntime(c.sim, moved, c.memory), BlobError);
}

// The fast codec of fp16-planned buffers equals the general conversions on every half value.
TEST(ProgramRuntimeHalfCodec, ExactOnAllHalfBitPatterns) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const float fast = floatOfHalfBits(static_cast<uint16_t>(h));
    ASSERT_EQ(std::memcmp(&f, &fast, sizeof f), 0) << std::hex << h;
    ASSERT_EQ(halfBitsOfRounded(f), floatToHalf(f)) << std::hex << h;
  }
  // The bulk (vector) paths, on every pattern in order (NaN/Inf blocks included) and shifted by
  // one so blocks mix finite and non-finite lanes differently.
  for (uint32_t shift : {0u, 1u}) {
    std::vector<uint16_t> halves;
    for (uint32_t h = 0; h <= 0xffffu; ++h) halves.push_back(static_cast<uint16_t>(h + shift));
    std::vector<float> floats(halves.size()), want_floats(halves.size());
    decodeHalf(halves.data(), floats.data(), static_cast<int64_t>(halves.size()));
    for (size_t i = 0; i < halves.size(); ++i) want_floats[i] = halfToFloat(halves[i]);
    ASSERT_EQ(std::memcmp(floats.data(), want_floats.data(), floats.size() * sizeof(float)), 0);
    std::vector<uint16_t> back(halves.size());
    encodeHalfRounded(floats.data(), back.data(), static_cast<int64_t>(floats.size()));
    for (size_t i = 0; i < halves.size(); ++i) ASSERT_EQ(back[i], floatToHalf(floats[i])) << i;
  }
}

// A blob with TASK + MPLN gets the program runtime; one written without them (as before the
// lowering existed) keeps the simulator, with the reason.
TEST(ProgramRuntimeLoader, UsesTheProgramOnlyWhenTheBlobCarriesIt) {
  perf::testing::PerfGraph p;
  Value* x = p.input("x", {1, 16, 8, 8});
  Node* c1 = p.conv("c1", x, 16, 3);
  Node* r1 = p.op("Relu", "r1", {c1->output()});
  p.g.addOutput(r1->output());
  // Compiled (program + memory plan), and the bare container an old npuc wrote.
  CompileOptions o;
  o.quantized = false;
  const std::string with = serializeCompiledModel(compileModel(
      std::shared_ptr<const Graph>(&p.g, [](const Graph*) {}), nullptr, socProfile("rk3588"), o));
  blob::BlobWriteOptions plain;
  plain.soc = "rk3588";
  const std::string without = blob::writeBlobBytes(p.g, plain);

  const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(p.g, 4);
  for (const bool has_program : {true, false}) {
    const CompiledModel b = readCompiledModel(has_program ? with : without, std::nullopt, "<test>");
    auto sim = std::make_shared<const QuantizedExecutor>(*b.graph);
    std::string why_not;
    auto rt = programRuntimeFor(b, sim, &why_not);
    if (has_program) {
      ASSERT_NE(rt, nullptr) << why_not;
      EXPECT_EQ(why_not, "");
      expectBitEqual(rt->run(inputs), sim->run(inputs), "loaded program");
    } else {
      EXPECT_EQ(rt, nullptr);
      EXPECT_NE(why_not.find("no lowered program"), std::string::npos) << why_not;
    }
  }
}

}  // namespace
}  // namespace npuc::runtime
