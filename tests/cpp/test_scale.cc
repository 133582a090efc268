// Stages of the compile and blob path that were quadratic in the graph size (issue #15, "Scale";
// bench/blob_scale.py measures the whole path from 10k to 100k nodes): arena placement scanned every
// placed buffer per buffer, the plan check compared every pair of buffers, and PartitionReport::
// deviceOf (asked per node by fusion grouping, task grouping, lowering, memory planning) and the
// lowering's CPU-op reasons scanned every placement. Each is now run at a size where the quadratic
// version takes many CPU seconds and the fixed one a small fraction of one (process CPU time, so a
// busy machine does not make them flaky); the new algorithms are also checked against brute force.
#include <gtest/gtest.h>

#include <ctime>
#include <functional>
#include <random>

#include "ir/graph.h"
#include "lower/lower.h"
#include "memory/npu_memory_plan.h"
#include "runtime/memory_planner.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

// Process CPU seconds of fn().
double cpuSeconds(const std::function<void()>& fn) {
  const std::clock_t c0 = std::clock();
  fn();
  return static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
}

// The quadratic versions took tens of seconds at these sizes; the fixed ones take well under one.
constexpr double kCpuBudgetSeconds = 2.0;
constexpr size_t kManyBuffers = 200000;

TEST(Scale, PlacingAChainOfManyBuffersIsNotQuadratic) {
  std::vector<BufferRequest> requests(kManyBuffers);
  for (size_t i = 0; i < requests.size(); ++i)
    requests[i] = {64, static_cast<int64_t>(i), static_cast<int64_t>(i + 1)};
  MemoryPlan plan;
  EXPECT_LT(cpuSeconds([&] { plan = planMemory(requests, 64); }), kCpuBudgetSeconds);
  EXPECT_EQ(plan.arena_bytes, 128u);  // two buffers live at once, each step
}

// The reference placement: every placed buffer compared with the new one (the former algorithm).
MemoryPlan bruteForcePlace(const std::vector<BufferRequest>& requests, size_t alignment,
                           const std::vector<size_t>& order) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> placed;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t bytes = alignUp(r.bytes, alignment);
    if (bytes == 0) continue;
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t p : placed)
      if (r.first <= requests[p].last && requests[p].first <= r.last)
        busy.push_back({plan.offsets[p], alignUp(requests[p].bytes, alignment)});
    std::sort(busy.begin(), busy.end());
    size_t best = 0, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [offset, size] : busy) {
      if (offset > cursor && offset - cursor >= bytes && offset - cursor < best_gap) {
        best_gap = offset - cursor;
        best = cursor;
      }
      cursor = std::max(cursor, offset + size);
    }
    plan.offsets[idx] = best_gap == SIZE_MAX ? cursor : best;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[idx] + bytes);
    placed.push_back(idx);
  }
  return plan;
}

TEST(Scale, PlacementEqualsTheBruteForceOneOnRandomRequests) {
  std::mt19937 rng(20260115);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 60;
    std::vector<BufferRequest> requests(n);
    for (BufferRequest& r : requests) {
      r.first = static_cast<int64_t>(rng() % 40);
      r.last = r.first + static_cast<int64_t>(rng() % 12);
      r.bytes = rng() % 5 == 0 ? 0 : 1 + rng() % 700;
    }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const MemoryPlan got = placeInOrder(requests, 64, order), want = bruteForcePlace(requests, 64, order);
    EXPECT_EQ(got.offsets, want.offsets) << "trial " << trial;
    EXPECT_EQ(got.arena_bytes, want.arena_bytes) << "trial " << trial;
  }
}

memory::PlannedBuffer arenaBuffer(uint64_t offset, uint64_t bytes, int64_t first, int64_t last) {
  memory::PlannedBuffer b;
  b.value = "v" + std::to_string(first) + "_" + std::to_string(offset);
  b.dtype = DType::Float32;
  b.offset = offset;
  b.bytes = bytes;
  b.first = first;
  b.last = last;
  return b;
}

void setLowerBound(memory::NpuMemoryPlan& plan) {
  std::vector<BufferRequest> live;
  for (const memory::PlannedBuffer& b : plan.buffers) live.push_back({b.bytes, b.first, b.last});
  plan.lower_bound_bytes = liveBytesLowerBound(live, plan.alignment);
}

TEST(Scale, CheckingAPlanOfManyBuffersIsNotQuadratic) {
  memory::NpuMemoryPlan plan;
  plan.arena_bytes = 128;
  for (size_t i = 0; i < kManyBuffers; ++i)
    plan.buffers.push_back(
        arenaBuffer(64 * (i % 2), 64, static_cast<int64_t>(i), static_cast<int64_t>(i + 1)));
  setLowerBound(plan);
  std::string violation = "not run";
  EXPECT_LT(cpuSeconds([&] { violation = memory::findPlanViolation(plan); }), kCpuBudgetSeconds);
  EXPECT_EQ(violation, "");
  plan.buffers[kManyBuffers / 2 + 1].offset = 0;  // now shares bytes with both neighbours
  EXPECT_NE(memory::findPlanViolation(plan).find("overlap"), std::string::npos);
}

TEST(Scale, PlanCheckFindsAnOverlapExactlyWhenTheBruteForceOneDoes) {
  std::mt19937 rng(20260116);
  int overlapping = 0;
  for (int trial = 0; trial < 500; ++trial) {
    memory::NpuMemoryPlan plan;
    plan.arena_bytes = 64 * 16;
    const size_t n = 1 + rng() % 12;
    for (size_t i = 0; i < n; ++i) {
      const int64_t first = static_cast<int64_t>(rng() % 10);
      const uint64_t bytes = 64 * (rng() % 4);  // zero-byte buffers included
      plan.buffers.push_back(
          arenaBuffer(64 * (rng() % 12), bytes, first, first + static_cast<int64_t>(rng() % 5)));
    }
    setLowerBound(plan);
    bool want = false;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        const memory::PlannedBuffer &a = plan.buffers[i], &b = plan.buffers[j];
        want |= a.first <= b.last && b.first <= a.last && a.offset < b.offset + b.bytes &&
                b.offset < a.offset + a.bytes;
      }
    const std::string got = memory::findPlanViolation(plan);
    EXPECT_EQ(!got.empty(), want) << "trial " << trial << ": " << got;
    overlapping += want;
  }
  EXPECT_GT(overlapping, 100);  // both outcomes are exercised
}

TEST(Scale, LoweringAGraphWithManyCpuNodesIsNotQuadratic) {
  // x -> 50000 x Erf (the NPU has no Erf: every node is a CPU op) -> y
  Graph g;
  Value* v = g.addInput("x", DType::Float32, {1, 4});
  for (int i = 0; i < 50000; ++i) {
    Node* n = g.appendNode("Erf", {v}, 1, "erf" + std::to_string(i));
    n->output()->setType(DType::Float32, {1, 4});
    v = n->output();
  }
  g.addOutput(v);
  const SocProfile& soc = socProfile("rk3588");
  lower::LoweredProgram program;
  const double seconds = cpuSeconds([&] {
    const PartitionReport placement = partitionGraph(g, soc);
    lower::LowerOptions options;
    options.placement = &placement;
    program = lower::lowerGraph(g, soc, options);
  });
  EXPECT_LT(seconds, kCpuBudgetSeconds);
  ASSERT_EQ(program.cpu_ops.size(), 50000u);
  EXPECT_EQ(program.cpu_ops.back().reason.rfind("unsupported op", 0), 0u) << program.cpu_ops.back().reason;
}

}  // namespace
}  // namespace npuc
