// The memory check before a run (runtime/run_memory.h): the caller's cap applies to everything a
// run holds, the machine's available memory to what it allocates anew, the error names the
// largest buffers, and the runtimes refuse before allocating.
#include <gtest/gtest.h>

#include <limits>

#include "common/error.h"
#include "opset/eval.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/executor.h"
#include "runtime/memory_planner.h"
#include "runtime/run_memory.h"

namespace npuc {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// The ResourceError text of f.check(...), "" when it passes.
std::string refusal(const RunFootprint& f, const RunMemoryLimits& limits, bool pool_has_idle,
                    std::optional<uint64_t> available) {
  try {
    f.check(limits, pool_has_idle, available);
  } catch (const ResourceError& e) {
    return e.what();
  }
  return "";
}

RunFootprint resizeLikeFootprint() {
  RunFootprint f;
  f.addTensor("output", "y", DType::Float32, {1, 1, 60000, 60000});  // 13.41 GiB
  f.add("activation arena", 4096, /*pooled=*/true);
  return f;
}

TEST(RunMemory, CapCoversEverythingTheRunHolds) {
  const RunFootprint f = resizeLikeFootprint();
  EXPECT_EQ(f.totalBytes(), uint64_t{14400000000} + 4096);
  EXPECT_EQ(f.pooledBytes(), 4096u);
  // A pooled arena still counts against the cap: the cap is on what one run holds.
  const std::string e = refusal(f, {kGiB}, /*pool_has_idle=*/true, std::nullopt);
  EXPECT_EQ(e,
            "a run of this model needs 13.41 GiB (14400004096 bytes): output 'y' float32[1,1,60000,60000] "
            "13.41 GiB, activation arena 4.00 KiB; that exceeds the run memory cap of 1.00 GiB (1073741824 "
            "bytes), set by max_run_bytes or NPUC_MAX_RUN_BYTES");
  EXPECT_EQ(refusal(f, {f.totalBytes()}, false, std::nullopt), "");  // the cap itself is allowed
  EXPECT_NE(refusal(f, {f.totalBytes() - 1}, false, std::nullopt), "");
  EXPECT_EQ(refusal(f, {}, false, std::nullopt), "");  // no cap, unknown memory: nothing to refuse
}

TEST(RunMemory, AvailableMemoryCoversWhatTheRunAllocatesAnew) {
  const RunFootprint f = resizeLikeFootprint();
  const uint64_t output = 14400000000;
  // With an idle pooled arena only the output is new.
  EXPECT_EQ(refusal(f, {}, /*pool_has_idle=*/true, output), "");
  const std::string e = refusal(f, {}, /*pool_has_idle=*/false, output);
  EXPECT_EQ(
      e,
      "a run of this model allocates 13.41 GiB (14400004096 bytes): output 'y' float32[1,1,60000,60000] "
      "13.41 GiB, activation arena 4.00 KiB; that exceeds the 13.41 GiB (14400000000 bytes) this machine "
      "has available now");
  EXPECT_NE(refusal(f, {}, true, output - 1).find("allocates 13.41 GiB (14400000000 bytes): output 'y'"),
            std::string::npos);
}

TEST(RunMemory, ErrorNamesTheLargestBuffersAndSumsTheRest) {
  RunFootprint f;
  for (int i = 0; i < 6; ++i) f.addTensor("value", "v" + std::to_string(i), DType::Float32, {1024 * (i + 1)});
  f.add("empty scratch", 0);
  const std::string e = refusal(f, {1}, false, std::nullopt);
  EXPECT_NE(e.find("value 'v5' float32[6144] 24.00 KiB, value 'v4' float32[5120] 20.00 KiB, value 'v3' "
                   "float32[4096] 16.00 KiB and 3 more buffer(s) of 24.00 KiB in all"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("empty scratch"), std::string::npos) << e;
}

TEST(RunMemory, SizesNeverWrap) {
  EXPECT_THROW(tensorBufferBytes(DType::Float64, {int64_t{1} << 62}), ResourceError);
  RunFootprint f;
  f.add("a", std::numeric_limits<uint64_t>::max());
  f.add("b", 1);
  EXPECT_EQ(f.totalBytes(), std::numeric_limits<uint64_t>::max());  // saturated, not 0
  EXPECT_NE(refusal(f, {kGiB}, false, std::nullopt), "");
}

TEST(RunMemory, AvailableMemoryIsKnownOnLinux) {
  const std::optional<uint64_t> available = availableMemoryBytes();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, 0u);
}

// x[1] -> Expand to [rows, 1024] -> y: the output is as large as `rows` says, the input tiny.
std::unique_ptr<Graph> expandGraph(int64_t rows) {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1});
  Value* shape = g->addConstant(Tensor::fromVector<int64_t>({rows, 1024}, {2}), "shape");
  Node* n = g->appendNode("Expand", {x, shape}, 1, "expand");
  inferNode(*n);
  g->addOutput(n->output());
  n->output()->setName("y");
  return g;
}

TEST(RunMemory, ExecutorRefusesBeforeAllocating) {
  // 12 GiB declared: refused by a 1 GiB cap before the output (or anything) is allocated, so the
  // test costs nothing; a regression would allocate and fill 12 GiB.
  const Executor ex(*expandGraph(int64_t{3} << 20));
  EXPECT_EQ(ex.runFootprint().totalBytes(), (uint64_t{3} << 20) * 1024 * 4 +
                                                ex.memoryStats().workspace_bytes +
                                                alignUp(ex.memoryStats().arena_bytes, kTensorAlignment));
  std::vector<Tensor> inputs;
  inputs.push_back(Tensor::fromVector<float>({1.0f}, {1}));
  try {
    ex.run(inputs, RunMemoryLimits{kGiB});
    FAIL() << "expected a ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("output 'y' float32[3145728,1024] 12.00 GiB"), std::string::npos)
        << e.what();
  }
  // The same model, small, runs under a cap that fits it.
  const Executor small(*expandGraph(2));
  const std::vector<Tensor> out = small.run(inputs, RunMemoryLimits{small.runFootprint().totalBytes()});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].numel(), 2048);
  EXPECT_EQ(out[0].data<float>()[2047], 1.0f);
}

TEST(RunMemory, SimulatorRefusesBeforeAllocating) {
  const quant::QuantizedExecutor sim(*expandGraph(int64_t{3} << 20));  // FP16 mode
  // The simulator holds every value and hands the output back as float32: 2 x 12 GiB.
  EXPECT_EQ(sim.runFootprint().totalBytes(), 2 * (uint64_t{3} << 20) * 1024 * 4 + 4);
  std::vector<Tensor> inputs;
  inputs.push_back(Tensor::fromVector<float>({1.0f}, {1}));
  EXPECT_THROW(sim.run(inputs, RunMemoryLimits{kGiB}), ResourceError);
  // A wrong input is reported as such, before any size question.
  EXPECT_THROW(sim.run({}, RunMemoryLimits{kGiB}), InputError);
}

}  // namespace
}  // namespace npuc
