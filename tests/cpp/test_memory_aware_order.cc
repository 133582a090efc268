// The memory-aware node order (memory/memory_aware_order.h) and its use by the compile driver:
// a better order on a badly interleaved graph, the exporter's order kept where nothing beats it,
// never a worse bound, no extra NPU<->CPU switches, fused groups contiguous, and a blob round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "memory/memory_aware_order.h"
#include "memory/memory_plan_codec.h"
#include "memory/npu_memory_plan.h"
#include "target/fusion_groups.h"
#include "target/soc_profile.h"

namespace npuc::memory {
namespace {

constexpr int64_t kHw = 32;

struct Builder {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Value* input(int64_t c) { return g->addInput("x", DType::Float32, {1, c, kHw, kHw}); }
  Value* conv(const std::string& name, Value* in, int64_t out_c) {
    Value* w = g->addConstant(Tensor(DType::Float32, {out_c, in->shape()[1], 1, 1}), name + "_w");
    Node* n = g->appendNode("Conv", {in, w}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{1, 1});
    n->output()->setType(DType::Float32, {1, out_c, kHw, kHw});
    return n->output();
  }
  Value* unary(const std::string& op, const std::string& name, Value* in) {
    Node* n = g->appendNode(op, {in}, 1, name);
    n->output()->setType(DType::Float32, in->shape());
    return n->output();
  }
  Value* concat(const std::string& name, Value* a, Value* b) {
    Node* n = g->appendNode("Concat", {a, b}, 1, name);
    n->attrs().set("axis", int64_t{1});
    n->output()->setType(DType::Float32, {1, a->shape()[1] + b->shape()[1], kHw, kHw});
    return n->output();
  }
  Value* add(const std::string& name, Value* a, Value* b) {
    Node* n = g->appendNode("Add", {a, b}, 1, name);
    n->output()->setType(DType::Float32, a->shape());
    return n->output();
  }
};

// Two branches that each widen to 256 channels and narrow back to 16, written interleaved: both
// wide tensors are live at once in the exporter's order, one at a time branch by branch. (Joined
// by a Concat: an Add would fuse into one branch's narrowing Conv, which then runs at the join.)
std::shared_ptr<Graph> interleavedBranches() {
  Builder b;
  Value* x = b.input(16);
  Value* wa = b.conv("a_wide", x, 256);
  Value* wb = b.conv("b_wide", x, 256);
  Value* na = b.conv("a_narrow", wa, 16);
  Value* nb = b.conv("b_narrow", wb, 16);
  b.g->addOutput(b.conv("head", b.concat("join", na, nb), 16));
  return b.g;
}

std::vector<const Node*> graphOrder(const Graph& g) {
  std::vector<const Node*> out;
  for (const Node* n : g.nodes()) out.push_back(n);
  return out;
}

std::vector<std::string> names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

// One NPU core: the multi-core schedules of these tiny graphs run the branches side by side, which
// a branch-at-a-time order would slow down, so there the exporter's order stays (tested below).
CompileOptions floatOptions(NodeOrder order = NodeOrder::MemoryAware, OpTargetMap op_target = {}) {
  CompileOptions o;
  o.quantized = false;  // a float build (FP16 on the NPU): no quantization plan needed
  o.node_order = order;
  o.op_target = std::move(op_target);
  o.single_core_mode = true;
  return o;
}

const SocProfile& soc() {
  return socProfile("rk3588");
}

TEST(MemoryAwareOrder, BranchAtATimeBeatsAnInterleavedExporterOrder) {
  const auto g = interleavedBranches();
  const PartitionReport placement = partitionGraph(*g, soc());
  const MemoryOrder order = chooseMemoryOrder(*g, nullptr, soc(), placement);
  EXPECT_TRUE(order.changed());
  EXPECT_LT(order.bound_bytes, order.exporter_bound_bytes);
  // The exporter's bound is the one the memory plan has for the graph as given.
  EXPECT_EQ(order.exporter_bound_bytes, planNpuMemory(*g, nullptr, soc(), placement).lower_bound_bytes);
  EXPECT_EQ(order.exporter_bound_bytes, orderLowerBound(*g, nullptr, soc(), placement, graphOrder(*g)));
  EXPECT_EQ(order.bound_bytes, orderLowerBound(*g, nullptr, soc(), placement, order.nodes));
  // One wide tensor (256 channels of fp16) at a time instead of two.
  const uint64_t wide = 256 * kHw * kHw * 2;
  EXPECT_GE(order.exporter_bound_bytes - order.bound_bytes, wide / 2);
  const std::vector<std::string> n = names(order.nodes);
  auto at = [&](const std::string& s) { return std::find(n.begin(), n.end(), s) - n.begin(); };
  EXPECT_TRUE(at("a_narrow") < at("b_wide") || at("b_narrow") < at("a_wide"));

  // The compile driver runs it: the plan's bound is the predicted one, the exporter's is reported.
  const CompiledModel m = compileModel(g, nullptr, soc(), floatOptions());
  ASSERT_TRUE(m.memory_plan);
  EXPECT_EQ(m.memory_plan->order, order.name);
  EXPECT_EQ(m.memory_plan->lower_bound_bytes, order.bound_bytes);
  EXPECT_EQ(m.memory_plan->exporter_order_bound_bytes, order.exporter_bound_bytes);
  EXPECT_EQ(names(graphOrder(*m.graph)), n);
  EXPECT_EQ(findPlanViolation(*m.memory_plan), "");
  // ... and node_order exporter keeps the graph as it was.
  const CompiledModel e = compileModel(g, nullptr, soc(), floatOptions(NodeOrder::Exporter));
  EXPECT_EQ(e.graph.get(), g.get());
  EXPECT_EQ(e.memory_plan->order, "exporter");
  EXPECT_EQ(e.memory_plan->lower_bound_bytes, order.exporter_bound_bytes);
  EXPECT_EQ(e.memory_plan->exporter_order_bound_bytes, order.exporter_bound_bytes);
  EXPECT_EQ(e.options.node_order, NodeOrder::Exporter);
}

// On three cores the exporter's interleaved branches run in parallel; the branch-at-a-time order
// reuses the wide buffer, so the second branch waits for the first: slower, so not taken. Whatever
// is chosen is never slower than the exporter's order on any core count.
TEST(MemoryAwareOrder, NoCoreCountGetsSlower) {
  CompileOptions multi = floatOptions(), exporter_multi = floatOptions(NodeOrder::Exporter);
  multi.single_core_mode = exporter_multi.single_core_mode = false;
  const CompiledModel m = compileModel(interleavedBranches(), nullptr, soc(), multi);
  const CompiledModel e = compileModel(interleavedBranches(), nullptr, soc(), exporter_multi);
  ASSERT_EQ(m.core_schedules.size(), 3u);
  for (uint32_t k = 1; k <= 3; ++k)
    EXPECT_LE(compiledPerf(m, nullptr, k).summary.total_time_us,
              compiledPerf(e, nullptr, k).summary.total_time_us)
        << k << " cores";
  EXPECT_LE(m.memory_plan->lower_bound_bytes, m.memory_plan->exporter_order_bound_bytes);
}

TEST(MemoryAwareOrder, ReorderedModelRoundTripsThroughTheBlob) {
  const CompiledModel m = compileModel(interleavedBranches(), nullptr, soc(), floatOptions());
  ASSERT_NE(m.memory_plan->order, "exporter");
  const CompiledModel b = readCompiledModel(serializeCompiledModel(m), std::nullopt, "<test>");
  ASSERT_TRUE(b.program && b.memory_plan);
  EXPECT_EQ(*b.program, *m.program);
  EXPECT_EQ(*b.memory_plan, *m.memory_plan);
  EXPECT_EQ(b.options, m.options);
  EXPECT_EQ(names(graphOrder(*b.graph)), names(graphOrder(*m.graph)));
  EXPECT_EQ(serializeCompiledModel(b), serializeCompiledModel(m));
  // The exporter-order build records its option (not the default) and round-trips too.
  const CompiledModel e =
      compileModel(interleavedBranches(), nullptr, soc(), floatOptions(NodeOrder::Exporter));
  const CompiledModel eb = readCompiledModel(serializeCompiledModel(e), std::nullopt, "<test>");
  EXPECT_EQ(eb.options.node_order, NodeOrder::Exporter);
  EXPECT_EQ(*eb.memory_plan, *e.memory_plan);
}

TEST(MemoryAwareOrder, ALinearChainKeepsItsOrder) {
  Builder b;
  Value* v = b.input(16);
  for (int i = 0; i < 6; ++i) v = b.conv("c" + std::to_string(i), v, i % 2 ? 16 : 128);
  b.g->addOutput(v);
  const PartitionReport placement = partitionGraph(*b.g, soc());
  const MemoryOrder order = chooseMemoryOrder(*b.g, nullptr, soc(), placement);
  EXPECT_EQ(order.name, "exporter");
  EXPECT_EQ(order.bound_bytes, order.exporter_bound_bytes);
  EXPECT_EQ(names(order.nodes), names(graphOrder(*b.g)));
  const CompiledModel m = compileModel(b.g, nullptr, soc(), floatOptions());
  EXPECT_EQ(m.graph.get(), b.g.get());  // not even copied
}

// A CPU branch and an NPU branch: no candidate that switches devices more often is chosen, and no
// candidate's bound is below... the chosen one among those allowed; never above the exporter's.
TEST(MemoryAwareOrder, NeverWorseAndNoExtraDeviceSwitches) {
  for (const OpTargetMap& op_target : std::vector<OpTargetMap>{
           {}, {{"b_wide", "cpu"}, {"b_narrow", "cpu"}}, {{"b_wide", "cpu"}}, {{"a_narrow", "cpu"}}}) {
    const auto g = interleavedBranches();
    const PartitionReport placement = partitionGraph(*g, soc(), op_target);
    const MemoryOrder order = chooseMemoryOrder(*g, nullptr, soc(), placement);
    ASSERT_FALSE(order.candidates.empty());
    const OrderCandidate& exporter = order.candidates.front();
    EXPECT_EQ(exporter.name, "exporter");
    EXPECT_LE(order.bound_bytes, order.exporter_bound_bytes);
    EXPECT_LE(deviceSwitches(placement, order.nodes), deviceSwitches(placement, graphOrder(*g)));
    // The exact search, when it runs (not when a heuristic is already at the one-step floor), is
    // never beaten.
    const auto exact = std::find_if(order.candidates.begin(), order.candidates.end(),
                                    [](const OrderCandidate& c) { return c.name == "exact"; });
    for (const OrderCandidate& c : order.candidates) {
      if (exact != order.candidates.end()) {
        EXPECT_GE(c.bound_bytes, exact->bound_bytes) << c.name;
      }
      EXPECT_EQ(c.rejected, c.device_switches > exporter.device_switches) << c.name;
      if (!c.rejected) {
        EXPECT_GE(c.bound_bytes, order.bound_bytes) << c.name;
      }
      if (c.name == order.name) {
        EXPECT_FALSE(c.rejected);
      }
    }
    const CompiledModel m = compileModel(g, nullptr, soc(), floatOptions(NodeOrder::MemoryAware, op_target));
    EXPECT_LE(m.memory_plan->lower_bound_bytes, m.memory_plan->exporter_order_bound_bytes);
    EXPECT_EQ(m.placement.handovers, placement.handovers);
    EXPECT_EQ(m.placement.npu_segments, placement.npu_segments);
    EXPECT_EQ(m.placement.cpu_segments, placement.cpu_segments);
  }
}

// Conv+Relu groups and a Conv+Add whose Add two anchors could take: the reordered graph has the
// same groups (so the same tasks and numerics), each run as one step at its last member.
TEST(MemoryAwareOrder, FusedGroupsAreKept) {
  for (const bool residual : {false, true}) {
    Builder b;
    Value* x = b.input(16);
    Value* wa = b.conv("a_wide", x, 256);
    Value* wb = b.conv("b_wide", x, 256);
    Value* ra = b.unary("Relu", "a_relu", wa);
    Value* rb = b.unary("Relu", "b_relu", wb);
    Value* na = b.conv("a_narrow", ra, 16);
    Value* nb = b.conv("b_narrow", rb, 16);
    b.g->addOutput(residual ? b.add("join", na, nb) : b.concat("join", na, nb));
    auto patterns = [](const CompiledModel& m) {
      std::set<std::string> out;
      for (const FusionGroup& grp : fusionGroups(*m.graph, soc(), m.placement)) {
        std::string names;
        for (const Node* n : grp.nodes()) names += n->name() + "+";
        out.insert(names);
      }
      return out;
    };
    const CompiledModel m = compileModel(b.g, nullptr, soc(), floatOptions());
    const CompiledModel e = compileModel(b.g, nullptr, soc(), floatOptions(NodeOrder::Exporter));
    // With the Add fused into a_narrow (which then runs at the join) no order frees a_wide early.
    if (residual) {
      EXPECT_LE(m.memory_plan->lower_bound_bytes, m.memory_plan->exporter_order_bound_bytes);
    } else {
      EXPECT_LT(m.memory_plan->lower_bound_bytes, m.memory_plan->exporter_order_bound_bytes);
    }
    EXPECT_EQ(patterns(m), patterns(e)) << residual;
    EXPECT_EQ(patterns(e).size(), residual ? 3u : 2u);  // a_wide+a_relu, b_wide+b_relu (, a_narrow+join)
    std::vector<std::string> tasks_m, tasks_e;
    for (const lower::Task& t : m.program->tasks) tasks_m.push_back(t.pattern);
    for (const lower::Task& t : e.program->tasks) tasks_e.push_back(t.pattern);
    std::sort(tasks_m.begin(), tasks_m.end());
    std::sort(tasks_e.begin(), tasks_e.end());
    EXPECT_EQ(tasks_m, tasks_e) << residual;
    // Without a contested Add, each group is written contiguously. (With one, the anchors are
    // written early so a_narrow still comes before b_narrow and keeps the Add.)
    std::map<const Node*, size_t> pos;
    for (const Node* n : m.graph->nodes()) pos.emplace(n, pos.size());
    if (!residual)
      for (const FusionGroup& grp : fusionGroups(*m.graph, soc(), m.placement)) {
        EXPECT_EQ(pos.at(grp.activation), pos.at(grp.anchor) + 1) << grp.pattern();
      }
    if (residual && m.memory_plan->order != "exporter") {
      EXPECT_LT(pos.at(m.graph->findNode("a_narrow")), pos.at(m.graph->findNode("b_narrow")));
    }
  }
}

// A plan in the exporter's order is still written as MPLN version 1 (blobs of such builds do not
// change); one in another order as version 2 with the order and the exporter's bound.
TEST(MemoryAwareOrder, PlanCodecWritesVersion2OnlyForAnotherOrder) {
  // Without in-place Concats (which take version 3: test_concat_in_place.cc), the join copies.
  CompileOptions memory_aware = floatOptions(), exporter = floatOptions(NodeOrder::Exporter);
  memory_aware.concat_in_place = exporter.concat_in_place = false;
  const CompiledModel m = compileModel(interleavedBranches(), nullptr, soc(), memory_aware);
  const CompiledModel e = compileModel(interleavedBranches(), nullptr, soc(), exporter);
  auto version = [](const std::string& bytes) { return static_cast<uint8_t>(bytes.at(0)); };
  const std::string v2 = encodeMemoryPlan(*m.memory_plan), v1 = encodeMemoryPlan(*e.memory_plan);
  EXPECT_EQ(version(v2), 2);
  EXPECT_EQ(version(v1), 1);
  EXPECT_EQ(decodeMemoryPlan(v2), *m.memory_plan);
  EXPECT_EQ(decodeMemoryPlan(v1), *e.memory_plan);
  EXPECT_EQ(decodeMemoryPlan(v1).exporter_order_bound_bytes, e.memory_plan->lower_bound_bytes);
  NpuMemoryPlan bad = *m.memory_plan;  // a bound above the exporter's is not a plan npuc writes
  bad.exporter_order_bound_bytes = bad.lower_bound_bytes - kArenaAlignment;
  EXPECT_THROW(decodeMemoryPlan(encodeMemoryPlan(bad)), BlobError);
}

// 24 independent branches have 4^24 down-sets: the exact search gives up within its budget (the
// others still run) instead of taking the compile down with it.
TEST(MemoryAwareOrder, AWideGraphSkipsTheExactSearchQuickly) {
  Builder b;
  Value* x = b.input(16);
  std::vector<Value*> ends;
  for (int i = 0; i < 24; ++i) {
    const std::string p = "br" + std::to_string(i);
    ends.push_back(b.conv(p + "_c", b.conv(p + "_b", b.conv(p + "_a", x, 64), 32), 16));
  }
  Value* v = ends[0];  // a Mul chain (no fusion): every branch's end is held until its Mul
  for (size_t i = 1; i < ends.size(); ++i) {
    Node* n = b.g->appendNode("Mul", {v, ends[i]}, 1, "mul" + std::to_string(i));
    n->output()->setType(DType::Float32, v->shape());
    v = n->output();
  }
  b.g->addOutput(v);
  const PartitionReport placement = partitionGraph(*b.g, soc());
  const auto t0 = std::chrono::steady_clock::now();
  const MemoryOrder order = chooseMemoryOrder(*b.g, nullptr, soc(), placement);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);  // about 0.1 s unloaded; generous for a shared machine
  for (const OrderCandidate& c : order.candidates) EXPECT_NE(c.name, "exact");
  EXPECT_LE(order.bound_bytes, order.exporter_bound_bytes);
}

TEST(MemoryAwareOrder, BadOrdersAreRefused) {
  const auto g = interleavedBranches();
  const PartitionReport placement = partitionGraph(*g, soc());
  std::vector<const Node*> order = graphOrder(*g);
  std::swap(order.front(), order.back());  // head before its inputs
  EXPECT_THROW(orderLowerBound(*g, nullptr, soc(), placement, order), GraphError);
  EXPECT_THROW(reorderedCopy(*g, order), GraphError);
  order.pop_back();
  EXPECT_THROW(reorderedCopy(*g, order), GraphError);
}

}  // namespace
}  // namespace npuc::memory
