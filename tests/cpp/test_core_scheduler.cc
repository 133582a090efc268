// The multi-core scheduler (sched/core_scheduler.h): decisions on hand-made task costs, the
// invariants on a compiled program, and the CSCH codec.
#include <gtest/gtest.h>

#include <memory>

#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "sched/arena_hazards.h"
#include "sched/core_scheduler.h"
#include "target/soc_profile.h"

namespace npuc::sched {
namespace {

constexpr double kSync = 1000;

TaskWork npuTask(double compute, double ddr, std::vector<uint32_t> reads = {}) {
  TaskWork w;
  w.whole = {compute, ddr, 100};
  w.reads = std::move(reads);
  return w;
}

// Every task placed once, on cores the schedule has, after everything it reads.
void expectInvariants(const std::vector<TaskWork>& work, const CoreSchedule& s) {
  ASSERT_EQ(s.tasks.size(), work.size());
  const Timeline t = timeSchedule(work, s, kSync);
  for (uint32_t i = 0; i < work.size(); ++i) {
    EXPECT_EQ(s.tasks[i].task, i);
    EXPECT_EQ(s.tasks[i].core_mask & ~((1u << s.cores) - 1), 0u) << "task " << i;
    EXPECT_EQ(s.tasks[i].core_mask == 0, !work[i].on_npu) << "task " << i;
    for (uint32_t d : work[i].reads) EXPECT_GE(t.tasks[i].start, t.tasks[d].end) << i << " reads " << d;
  }
}

TEST(CoreScheduler, OneCoreRunsTheTasksBackToBack) {
  std::vector<TaskWork> work = {npuTask(5000, 100), npuTask(100, 3000, {0}), npuTask(800, 900, {1})};
  work[1].serial_cycles = 50;
  const CoreSchedule s = scheduleCores(work, 1, kSync);
  const Timeline t = timeSchedule(work, s, kSync);
  EXPECT_DOUBLE_EQ(t.makespan, 5100 + 3100 + 50 + 1000);
  EXPECT_EQ(t.sync_cycles, 0);
  EXPECT_EQ(t.contention_cycles, 0);
  expectInvariants(work, s);
}

TEST(CoreScheduler, IndependentBranchesRunOnTwoCores) {
  // a stem, two compute-bound branches of three tasks, a join reading both.
  std::vector<TaskWork> work = {npuTask(1000, 10)};
  for (uint32_t b = 0; b < 2; ++b) {
    work.push_back(npuTask(20000, 10, {0}));
    work.push_back(npuTask(20000, 10, {static_cast<uint32_t>(work.size() - 1)}));
  }
  work.push_back(npuTask(1000, 10, {2, 4}));
  const CoreSchedule one = scheduleCores(work, 1, kSync), two = scheduleCores(work, 2, kSync);
  expectInvariants(work, two);
  EXPECT_NE(two.tasks[1].core_mask, two.tasks[3].core_mask);  // the branches' first tasks
  EXPECT_FALSE(two.tasks[5].waits_for.empty());               // the join waits for the other core
  const double t1 = timeSchedule(work, one, kSync).makespan, t2 = timeSchedule(work, two, kSync).makespan;
  EXPECT_LT(t2, 0.6 * t1);
}

TEST(CoreScheduler, SplitsABigTaskAndKeepsATinyOneWhole) {
  // A conv reading much: split by rows every core reads all the weights (more bytes in total than
  // whole), split by output channels every core reads the input once (fewer bytes per part).
  TaskWork big = npuTask(30000, 20000);
  big.splits = {{CoreSplit::Rows, 3, {10000, 15000, 100}},
                {CoreSplit::OutputChannels, 3, {10000, 9000, 100}}};
  TaskWork tiny = npuTask(300, 200, {0});
  tiny.splits = {{CoreSplit::OutputChannels, 3, {100, 150, 100}}};  // saves less than the sync costs
  const std::vector<TaskWork> work = {big, tiny};
  const CoreSchedule s = scheduleCores(work, 3, kSync);
  expectInvariants(work, s);
  EXPECT_EQ(s.tasks[0].split, CoreSplit::OutputChannels);  // the split moving fewer bytes
  EXPECT_EQ(s.tasks[0].core_mask, 7u);
  EXPECT_EQ(s.tasks[1].split, CoreSplit::Whole);
  const Timeline t = timeSchedule(work, s, kSync);
  EXPECT_GT(t.sync_cycles, 0);
  EXPECT_GT(t.contention_cycles, 0);  // three parts share the DDR
}

TEST(CoreScheduler, DdrBoundBranchesShareTheBandwidth) {
  // Two independent DDR-bound tasks: on two cores they take as long as on one.
  const std::vector<TaskWork> work = {npuTask(10, 10000), npuTask(10, 10000)};
  const Timeline t = timeSchedule(work, scheduleCores(work, 2, 0), 0);
  EXPECT_NEAR(t.makespan, timeSchedule(work, scheduleCores(work, 1, 0), 0).makespan, 300);
}

TEST(CoreScheduler, CpuOpsAreBarriersOnNoCore) {
  TaskWork cpu;
  cpu.on_npu = false;
  cpu.barrier = true;
  cpu.whole.overhead_cycles = 500;
  const std::vector<TaskWork> work = {npuTask(4000, 10), npuTask(4000, 10), cpu, npuTask(100, 10)};
  const CoreSchedule s = scheduleCores(work, 2, kSync);
  expectInvariants(work, s);
  const Timeline t = timeSchedule(work, s, kSync);
  EXPECT_GE(t.tasks[2].start, std::max(t.tasks[0].end, t.tasks[1].end));
  EXPECT_GE(t.tasks[3].start, t.tasks[2].end);
}

TEST(CoreScheduler, ChecksAndCodec) {
  std::vector<TaskWork> work = {npuTask(1000, 10), npuTask(1000, 10, {0})};
  work[1].splits = {{CoreSplit::Rows, 2, {100, 10, 100}}};
  const std::vector<CoreSchedule> all = {scheduleCores(work, 1, kSync), scheduleCores(work, 2, kSync)};
  EXPECT_EQ(decodeCoreSchedules(encodeCoreSchedules(all)), all);
  std::string bytes = encodeCoreSchedules(all);
  EXPECT_THROW(decodeCoreSchedules(bytes.substr(0, bytes.size() - 1)), BlobError);
  CoreSchedule bad = all[1];
  bad.tasks[0].core_mask = 4;  // core 2 of a 2-core schedule
  EXPECT_THROW(checkSchedule(bad, {true, true}, 3), InputError);
  EXPECT_THROW(checkSchedule(all[1], {true, true}, 1), InputError);  // more cores than the SoC has
  EXPECT_EQ(coreMaskName(7), "0_1_2");
  EXPECT_EQ(coreMaskName(0), "-");
}

// A compiled program: two branches of convs joined by an Add.
std::shared_ptr<Graph> branchyGraph() {
  auto g = std::make_shared<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 64, 56, 56});
  auto conv = [&](const std::string& name, Value* in, int64_t out_c, int64_t k) {
    Value* w = g->addConstant(Tensor(DType::Float32, {out_c, in->shape()[1], k, k}), name + "_w");
    Node* n = g->appendNode("Conv", {in, w}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{k, k});
    n->attrs().set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    n->output()->setType(DType::Float32, {1, out_c, 56, 56});
    return n->output();
  };
  Value* a = conv("a2", conv("a1", x, 128, 3), 128, 3);
  Value* b = conv("b2", conv("b1", x, 128, 3), 128, 3);
  Node* add = g->appendNode("Add", {a, b}, 1, "join");
  add->output()->setType(DType::Float32, {1, 128, 56, 56});
  Value* tiny = conv("tiny", add->output(), 8, 1);
  g->addOutput(tiny);
  return g;
}

TEST(CoreScheduler, CompiledProgramSchedulesRoundTripAndNeverSlowDown) {
  const SocProfile& soc = socProfile("rk3588");
  CompileOptions options;
  options.quantized = false;  // a float build: no quantization plan needed
  const CompiledModel m = compileModel(branchyGraph(), nullptr, soc, options);
  ASSERT_EQ(m.core_schedules.size(), 3u);
  double previous = 1e300;
  for (uint32_t k = 1; k <= 3; ++k) {
    const perf::PerfReport r = compiledPerf(m, nullptr, k);
    EXPECT_EQ(r.cores, k);
    EXPECT_LE(r.summary.total_time_us, previous * (1 + 1e-12)) << k << " cores";
    previous = r.summary.total_time_us;
  }
  // One core: the rows back to back, as the single-core cost model adds them up.
  const perf::PerfReport one = compiledPerf(m, nullptr, 1);
  double sum = 0;
  for (const perf::PerfRow& row : one.rows) sum += row.time_us;
  EXPECT_NEAR(one.summary.total_time_us, sum, 1e-6 * sum);
  // Three cores: the first big conv is split (or its branch runs beside the other), the tiny conv stays
  // whole.
  const perf::PerfReport three = compiledPerf(m, nullptr, 3);
  EXPECT_LT(three.summary.total_time_us, 0.8 * one.summary.total_time_us);
  EXPECT_EQ(three.rows.back().split, "whole");
  EXPECT_EQ(three.rows.back().cores.size(), 1u);
  const CompiledModel loaded = readCompiledModel(serializeCompiledModel(m), std::nullopt, "mem");
  EXPECT_EQ(loaded.core_schedules, m.core_schedules);
  EXPECT_THROW(compiledPerf(m, nullptr, 4), ConfigError);
  CompileOptions single;
  single.quantized = false;
  single.single_core_mode = true;
  const CompiledModel s = compileModel(branchyGraph(), nullptr, soc, single);
  EXPECT_EQ(s.core_schedules.size(), 1u);
  EXPECT_THROW(compiledPerf(s, nullptr, 2), ConfigError);
}

// A fork: a long conv and a chain of short ones both read the stem's output. In program order the
// chain's first conv is the stem output's last reader, so the chain's second conv may write over
// it, while on another core the long conv is still reading it. 16 channels and 2 rows: no conv
// can be split over cores, so the branches run side by side.
std::shared_ptr<Graph> forkGraph() {
  const Shape shape = {1, 16, 2, 8192};
  auto g = std::make_shared<Graph>();
  Value* x = g->addInput("x", DType::Float32, shape);
  auto conv = [&](const std::string& name, Value* in, int64_t k) {
    Value* w = g->addConstant(Tensor(DType::Float32, {16, 16, k, k}), name + "_w");
    Node* n = g->appendNode("Conv", {in, w}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{k, k});
    n->attrs().set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    n->output()->setType(DType::Float32, shape);
    return n->output();
  };
  Value* stem = conv("stem", x, 1);
  Value* slow = conv("slow", conv("slow0", stem, 3), 3);
  Value* fast = conv("fast2", conv("fast1", conv("fast0", stem, 1), 1), 1);
  Node* add = g->appendNode("Add", {slow, fast}, 1, "join");
  add->output()->setType(DType::Float32, shape);
  g->addOutput(add->output());
  return g;
}

// The memory plan reuses arena bytes in program order; on three cores no task may write them
// before every earlier task reading or writing them has finished.
TEST(CoreScheduler, ArenaReuseWaitsForEveryEarlierUserOfTheBytes) {
  CompileOptions options;
  options.quantized = false;
  const CompiledModel m = compileModel(forkGraph(), nullptr, socProfile("rk3588"), options);
  ASSERT_TRUE(m.program && m.memory_plan);
  const std::vector<std::vector<uint32_t>> hazards = arenaHazards(*m.program, *m.memory_plan);
  size_t pairs = 0;
  for (const auto& h : hazards) pairs += h.size();
  ASSERT_GT(pairs, 0u) << "the plan reuses no bytes: the test would prove nothing";
  const perf::PerfReport r = compiledPerf(m, nullptr, 3);
  EXPECT_NE(r.rows[2].cores, r.rows[1].cores);           // the branches do run side by side
  std::vector<int> row_of(m.program->tasks.size(), -1);  // Converts have no row
  int row = 0;
  for (const lower::Task& t : m.program->tasks)
    if (t.kind != lower::TaskKind::Convert) row_of[t.id] = row++;
  ASSERT_EQ(static_cast<size_t>(row), r.rows.size());
  for (size_t j = 0; j < hazards.size(); ++j)
    for (uint32_t i : hazards[j]) {
      if (row_of[j] < 0 || row_of[i] < 0) continue;
      EXPECT_GE(r.rows[row_of[j]].start_us, r.rows[row_of[i]].end_us - 1e-9)
          << "task " << j << " overwrites bytes task " << i << " still uses";
    }
}

}  // namespace
}  // namespace npuc::sched
