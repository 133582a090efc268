// In-place Concat (memory/concat_in_place.h): when it applies and why not, the plan of a buffer
// holding others (bound, placement, findPlanViolation, findPlanMismatch, the MPLN codec), the
// compile driver's choice (never a larger arena, eval_perf costs the Concat as free), and the
// program runtime running with the aliasing: outputs equal the simulator's bit for bit (a
// yolov8n-like neck in FP16, two sole-reader convs in INT8, the shared models).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <set>

#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "lower/lower.h"
#include "memory/concat_in_place.h"
#include "memory/memory_plan_codec.h"
#include "memory/npu_memory_plan.h"
#include "quant_test_util.h"
#include "runtime/program_runtime.h"
#include "runtime/program_runtime_loader.h"
#include "target/soc_profile.h"

namespace npuc::memory {
namespace {

using ::npuc::testing::calibratedPlan;
using ::npuc::testing::randomNormalInputs;

// Small graphs with random weights (zero weights would make every output equal).
struct Net {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  std::mt19937 rng{7};
  Value* input(const std::string& name, Shape shape) {
    return g->addInput(name, DType::Float32, std::move(shape));
  }
  // A kxk "same" Conv (stride 1 or 2) followed by a Relu, as Conv+Relu fuses.
  Value* convRelu(const std::string& name, Value* in, int64_t out_c, int64_t k = 3, int64_t stride = 1) {
    const Shape& x = in->shape();
    Tensor w(DType::Float32, {out_c, x[1], k, k});
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = normal(rng);
    Node* n = g->appendNode("Conv", {in, g->addConstant(std::move(w), name + "_w")}, 1, name);
    n->output()->setName(name + "_conv");
    n->attrs().set("kernel_shape", std::vector<int64_t>{k, k});
    n->attrs().set("strides", std::vector<int64_t>{stride, stride});
    n->attrs().set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    const int64_t oh = (x[2] + 2 * (k / 2) - k) / stride + 1, ow = (x[3] + 2 * (k / 2) - k) / stride + 1;
    n->output()->setType(DType::Float32, {x[0], out_c, oh, ow});
    Node* r = g->appendNode("Relu", {n->output()}, 1, name + "_relu");
    r->output()->setName(name + "_relu");
    r->output()->setType(DType::Float32, n->output()->shape());
    return r->output();
  }
  Value* concat(const std::string& name, const std::vector<Value*>& in, int64_t axis = 1) {
    Node* n = g->appendNode("Concat", in, 1, name);
    n->output()->setName(name);
    n->attrs().set("axis", axis);
    Shape s = in[0]->shape();
    s[static_cast<size_t>(axis)] = 0;
    for (const Value* v : in) s[static_cast<size_t>(axis)] += v->shape()[static_cast<size_t>(axis)];
    n->output()->setType(DType::Float32, s);
    return n->output();
  }
};

const SocProfile& rk3588() {
  return socProfile("rk3588");
}

// yolov8n's neck in small: P3 is written early and held while a deeper branch runs, then
// Concat(deep, P3) feeds the head. Without in-place the peak is deep + P3 + their Concat.
std::shared_ptr<Graph> neck() {
  Net n;
  Value* x = n.input("x", {1, 8, 32, 32});
  Value* p3 = n.convRelu("p3", x, 16);
  Value* deep = n.convRelu("deep2", n.convRelu("deep1", p3, 32), 32);
  Value* cat = n.concat("cat", {deep, p3});
  n.g->addOutput(n.convRelu("head", cat, 8, 1));
  return n.g;
}

// Two convs each read only by the Concat: INT8 puts both on the Concat's grid (shareConcatScales).
std::shared_ptr<Graph> twoConvs(int64_t a_channels = 16) {
  Net n;
  Value* x = n.input("x", {1, 8, 32, 32});
  Value* a = n.convRelu("a", x, a_channels);
  Value* b = n.convRelu("b", x, 32);
  n.g->addOutput(n.convRelu("head", n.concat("cat", {a, b}), 8, 1));
  return n.g;
}

const Node& nodeNamed(const Graph& g, const std::string& name) {
  for (const Node* n : g.nodes())
    if (n->name() == name) return *n;
  throw GraphError("no node " + name);
}

const PlannedBuffer& npuBuffer(const NpuMemoryPlan& plan, const std::string& value) {
  for (const PlannedBuffer& b : plan.buffers)
    if (b.value == value && b.format == BufferFormat::Npu) return b;
  throw GraphError("no buffer " + value);
}

std::string problemOf(const Graph& g, const std::string& concat, const quant::QuantPlan* q = nullptr,
                      const OpTargetMap& op_target = {}) {
  return concatInPlaceProblem(nodeNamed(g, concat), q, rk3588(), partitionGraph(g, rk3588(), op_target),
                              kArenaAlignment);
}

TEST(ConcatInPlace, AppliesToAChannelConcatOfNpuConvs) {
  std::shared_ptr<Graph> g = neck();
  std::vector<uint64_t> offsets;
  EXPECT_EQ(concatInPlaceProblem(nodeNamed(*g, "cat"), nullptr, rk3588(), partitionGraph(*g, rk3588()),
                                 kArenaAlignment, &offsets),
            "");
  // deep (32 fp16 channels of 32x32) first, P3 after it.
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 32 * 32 * 32 * 2}));
}

TEST(ConcatInPlace, SaysWhyNot) {
  {  // 4 channels: the second slice does not start on a C2 block (fp16 on rk3588: 8)
    std::shared_ptr<Graph> g = twoConvs(4);
    EXPECT_NE(problemOf(*g, "cat").find("not on a block of 8"), std::string::npos) << problemOf(*g, "cat");
  }
  {  // a graph input as a slice
    Net n;
    Value* x = n.input("x", {1, 16, 8, 8});
    n.g->addOutput(n.convRelu("head", n.concat("cat", {x, n.convRelu("a", x, 16)}), 8, 1));
    EXPECT_NE(problemOf(*n.g, "cat").find("graph input"), std::string::npos);
  }
  {  // along H
    Net n;
    Value* x = n.input("x", {1, 16, 8, 8});
    Value* cat = n.concat("cat", {n.convRelu("a", x, 16), n.convRelu("b", x, 16)}, 2);
    Node* tail = n.g->appendNode("Relu", {cat}, 1, "tail");
    tail->output()->setType(DType::Float32, cat->shape());
    n.g->addOutput(tail->output());
    EXPECT_NE(problemOf(*n.g, "cat").find("channel dim"), std::string::npos) << problemOf(*n.g, "cat");
  }
  {  // a graph output (its own I/O buffer)
    Net n;
    Value* x = n.input("x", {1, 16, 8, 8});
    n.g->addOutput(n.concat("cat", {n.convRelu("a", x, 16), n.convRelu("b", x, 16)}));
    EXPECT_NE(problemOf(*n.g, "cat").find("graph output"), std::string::npos);
  }
  {  // the same value twice, and a producer on the CPU
    Net n;
    Value* x = n.input("x", {1, 16, 8, 8});
    Value* a = n.convRelu("a", x, 16);
    n.g->addOutput(n.convRelu("head", n.concat("cat", {a, a}), 8, 1));
    EXPECT_NE(problemOf(*n.g, "cat").find("read twice"), std::string::npos);
    EXPECT_NE(problemOf(*n.g, "cat", nullptr, {{"a_relu", "cpu"}}).find("on the CPU"), std::string::npos);
    EXPECT_NE(problemOf(*n.g, "cat", nullptr, {{"cat", "cpu"}}).find("runs on the CPU"), std::string::npos);
  }
  {  // INT8: P3 is also read by deep1, so it keeps its own scale and the Concat requantizes it, in
     // its slice: fine while deep1 reads it before the Concat, refused once a reader follows.
    std::shared_ptr<Graph> g = neck();
    const quant::QuantPlan q = calibratedPlan(*g);
    EXPECT_EQ(problemOf(*g, "cat", &q), "");
    EXPECT_EQ(rescaledInputs(nodeNamed(*g, "cat"), &q), (std::vector<bool>{false, true}));
    EXPECT_FALSE(concatCopiesNothing(nodeNamed(*g, "cat"), &q));
    const PartitionReport placement = partitionGraph(*g, rk3588());
    EXPECT_EQ(inPlaceConcatCandidates(*g, &q, rk3588(), placement), (std::vector<std::string>{"cat"}));
    Node* late = g->appendNode("Relu", {g->findValue("p3_relu")}, 1, "late");
    late->output()->setType(DType::Float32, g->findValue("p3_relu")->shape());
    g->addOutput(late->output());
    const quant::QuantPlan q2 = calibratedPlan(*g);
    EXPECT_TRUE(inPlaceConcatCandidates(*g, &q2, rk3588(), partitionGraph(*g, rk3588())).empty());
    EXPECT_EQ(problemOf(*g, "cat", &q2), "");  // the node alone is fine: the plan knows the steps
  }
}

TEST(ConcatInPlace, PlanNestsTheInputsAndLowersTheBound) {
  std::shared_ptr<Graph> g = neck();
  const PartitionReport placement = partitionGraph(*g, rk3588());
  EXPECT_EQ(inPlaceConcatCandidates(*g, nullptr, rk3588(), placement), (std::vector<std::string>{"cat"}));
  const NpuMemoryPlan copy = planNpuMemory(*g, nullptr, rk3588(), placement);
  const NpuMemoryPlan nested = planNpuMemory(*g, nullptr, rk3588(), placement, {"cat"});
  EXPECT_EQ(findPlanViolation(nested), "");
  EXPECT_EQ(findPlanMismatch(nested, *g, nullptr, rk3588(), placement), "");
  EXPECT_EQ(nested.containers(), (std::set<std::string>{"cat"}));
  const PlannedBuffer& cat = npuBuffer(nested, "cat");
  const PlannedBuffer& deep = npuBuffer(nested, "deep2_relu");
  const PlannedBuffer& p3 = npuBuffer(nested, "p3_relu");
  EXPECT_EQ(deep.offset, cat.offset);
  EXPECT_EQ(p3.offset, cat.offset + 32 * 32 * 32 * 2);
  EXPECT_EQ(cat.first, p3.first);  // the container is live from the first slice written
  EXPECT_EQ(deep.bytes + p3.bytes, cat.bytes);
  // Without: deep1 + deep2 + P3 at deep2's step is below deep2 + P3 + cat at the Concat's; with it,
  // the Concat's step holds only its container.
  EXPECT_LT(nested.lower_bound_bytes, copy.lower_bound_bytes);
  EXPECT_EQ(nested.lower_bound_bytes, plannedLowerBound(*g, nullptr, rk3588(), placement, {"cat"}));
  EXPECT_EQ(nested.arena_bytes, nested.lower_bound_bytes);
  // A Concat that cannot be planned in place is refused by name.
  std::shared_ptr<Graph> bad = twoConvs(4);
  EXPECT_THROW(planNpuMemory(*bad, nullptr, rk3588(), partitionGraph(*bad, rk3588()), {"cat"}), GraphError);
}

TEST(ConcatInPlace, PlanViolationsOfNestedBuffers) {
  std::shared_ptr<Graph> g = neck();
  const PartitionReport placement = partitionGraph(*g, rk3588());
  const NpuMemoryPlan good = planNpuMemory(*g, nullptr, rk3588(), placement, {"cat"});
  auto index = [&](const std::string& v) {
    for (size_t i = 0; i < good.buffers.size(); ++i)
      if (good.buffers[i].value == v) return i;
    return size_t{0};
  };
  const size_t p3 = index("p3_relu"), deep = index("deep2_relu"), cat = index("cat");
  {  // a slice moved past its container's end
    NpuMemoryPlan bad = good;
    bad.buffers[p3].offset += 64;
    bad.arena_bytes += 64;
    EXPECT_NE(findPlanViolation(bad).find("not inside its container"), std::string::npos)
        << findPlanViolation(bad);
  }
  {  // two slices sharing bytes
    NpuMemoryPlan bad = good;
    bad.buffers[p3].offset = bad.buffers[deep].offset;
    EXPECT_NE(findPlanViolation(bad).find("overlap"), std::string::npos) << findPlanViolation(bad);
    // ... which is sound bytes-wise nowhere else, but not the plan of the graph: P3's slice is
    // after deep's channels.
    EXPECT_NE(findPlanMismatch(bad, *g, nullptr, rk3588(), placement), "");
  }
  {  // live before its container
    NpuMemoryPlan bad = good;
    bad.buffers[cat].first = bad.buffers[p3].first + 1;
    EXPECT_NE(findPlanViolation(bad).find("live outside its container"), std::string::npos);
  }
  {  // nested twice
    NpuMemoryPlan bad = good;
    bad.buffers[cat].within = static_cast<int64_t>(p3);
    EXPECT_NE(findPlanViolation(bad), "");
  }
  {  // a slice the graph does not allow: a Concat that is not eligible
    std::shared_ptr<Graph> g4 = twoConvs(4);
    const PartitionReport p4 = partitionGraph(*g4, rk3588());
    NpuMemoryPlan claimed = planNpuMemory(*g4, nullptr, rk3588(), p4);
    for (PlannedBuffer& b : claimed.buffers)
      if (b.value == "a_relu")
        b.within = static_cast<int64_t>(&npuBuffer(claimed, "cat") - claimed.buffers.data());
    EXPECT_NE(findPlanMismatch(claimed, *g4, nullptr, rk3588(), p4).find("cannot be planned in place"),
              std::string::npos);
  }
}

TEST(ConcatInPlace, CodecWritesVersion3OnlyWithNestedBuffers) {
  std::shared_ptr<Graph> g = neck();
  const PartitionReport placement = partitionGraph(*g, rk3588());
  const NpuMemoryPlan nested = planNpuMemory(*g, nullptr, rk3588(), placement, {"cat"});
  const std::string bytes = encodeMemoryPlan(nested);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 3);
  EXPECT_EQ(decodeMemoryPlan(bytes), nested);
  EXPECT_EQ(static_cast<uint8_t>(encodeMemoryPlan(planNpuMemory(*g, nullptr, rk3588(), placement))[0]), 1);
  // A container index past the buffers is refused by name.
  NpuMemoryPlan bad = nested;
  for (PlannedBuffer& b : bad.buffers)
    if (b.within >= 0) b.within = 1000;
  EXPECT_THROW(
      {
        try {
          decodeMemoryPlan(encodeMemoryPlan(bad));
        } catch (const BlobError& e) {
          EXPECT_NE(std::string(e.what()).find("container index 1000"), std::string::npos) << e.what();
          throw;
        }
      },
      BlobError);
}

// The compiled model's outputs through the program runtime (the arena with the aliasing) equal the
// simulator's bit for bit.
void expectRuntimeEqualsSimulator(const CompiledModel& m, const std::string& what) {
  auto sim = m.quant_plan ? std::make_shared<const quant::QuantizedExecutor>(*m.graph, *m.quant_plan)
                          : std::make_shared<const quant::QuantizedExecutor>(*m.graph);
  std::string why;
  std::shared_ptr<const runtime::ProgramRuntime> rt = runtime::programRuntimeFor(m, sim, &why);
  ASSERT_TRUE(rt) << what << ": " << why;
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<Tensor> inputs = randomNormalInputs(*m.graph, seed);
    const std::vector<Tensor> got = rt->run(inputs), want = sim->run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << what << " output " << i;
  }
}

CompileOptions options(bool quantized, bool in_place) {
  CompileOptions o;
  o.quantized = quantized;
  o.concat_in_place = in_place;
  return o;
}

TEST(ConcatInPlace, CompileDriverRuntimeAndEvalPerf) {
  struct Case {
    std::string what;
    std::shared_ptr<Graph> graph;
    bool int8;
  };
  for (const Case& c : {Case{"neck fp16", neck(), false}, Case{"two convs int8", twoConvs(), true},
                        Case{"neck int8 (P3 rescaled in its slice)", neck(), true}}) {
    std::optional<quant::QuantPlan> q;
    if (c.int8) q = calibratedPlan(*c.graph);
    const quant::QuantPlan* plan = q ? &*q : nullptr;
    const CompiledModel copy = compileModel(c.graph, plan, rk3588(), options(c.int8, false));
    const CompiledModel in_place = compileModel(c.graph, plan, rk3588(), options(c.int8, true));
    ASSERT_EQ(in_place.memory_plan->containers(), (std::set<std::string>{"cat"})) << c.what;
    EXPECT_TRUE(copy.memory_plan->containers().empty());
    EXPECT_LE(in_place.memory_plan->arena_bytes, copy.memory_plan->arena_bytes) << c.what;
    // The reference stays the exporter order's bound without in-place Concats.
    EXPECT_EQ(in_place.memory_plan->exporter_order_bound_bytes, copy.memory_plan->exporter_order_bound_bytes);
    expectRuntimeEqualsSimulator(in_place, c.what);
    // eval_perf: a Concat that copies nothing is free, and the frame faster by what the copy cost;
    // one that rescales a slice is costed as before, and no core count gets slower.
    const bool free = concatCopiesNothing(nodeNamed(*in_place.graph, "cat"), plan);
    EXPECT_EQ(free, c.what != "neck int8 (P3 rescaled in its slice)");
    for (uint32_t cores : {1u, 3u}) {
      const perf::PerfReport with = compiledPerf(in_place, nullptr, cores);
      const perf::PerfReport without = compiledPerf(copy, nullptr, cores);
      double concat_us = -1;
      for (const perf::PerfRow& r : with.rows)
        if (r.op_type == "Concat") concat_us = r.time_us;
      if (free) {
        EXPECT_EQ(concat_us, 0.0) << c.what;
        EXPECT_LT(with.summary.total_time_us, without.summary.total_time_us) << c.what << " cores " << cores;
      } else {
        EXPECT_GT(concat_us, 0.0) << c.what;
        EXPECT_LE(with.summary.total_time_us, without.summary.total_time_us) << c.what << " cores " << cores;
      }
    }
    // The blob carries the decision: loaded, the plan, the runtime and eval_perf are the same.
    const CompiledModel loaded = readCompiledModel(serializeCompiledModel(in_place), std::nullopt, "test");
    EXPECT_EQ(*loaded.memory_plan, *in_place.memory_plan) << c.what;
    expectRuntimeEqualsSimulator(loaded, c.what + " loaded");
    EXPECT_EQ(compiledPerf(loaded).summary.total_time_us, compiledPerf(in_place).summary.total_time_us);
  }
}

// Every shared model, INT8 and FP16: each Concat the driver planned in place runs as a no-op, and
// the outputs equal the simulator's bit for bit; the arena is never larger than without.
TEST(ConcatInPlace, SharedModelsStayBitIdentical) {
  int nested_models = 0;
  for (const char* file : {"mobilenet_v2.onnx", "shufflenet_v2_x0_5.onnx", "tiny_vit.onnx", "glu_net.onnx",
                           "yolo_focus.onnx", "conv_transpose_clip.onnx"}) {
    std::unique_ptr<Graph> owned = ::npuc::testing::optimizedSharedModel(file);
    if (!owned) NPUC_SKIP_MISSING_DEP("shared models not found");
    std::shared_ptr<const Graph> g(std::move(owned));
    const quant::QuantPlan q = calibratedPlan(*g);
    for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
      const std::string what = std::string(file) + (plan ? " int8" : " fp16");
      const CompiledModel copy = compileModel(g, plan, rk3588(), options(plan != nullptr, false));
      const CompiledModel in_place = compileModel(g, plan, rk3588(), options(plan != nullptr, true));
      EXPECT_LE(in_place.memory_plan->arena_bytes, copy.memory_plan->arena_bytes) << what;
      EXPECT_EQ(findPlanViolation(*in_place.memory_plan), "") << what;
      nested_models += !in_place.memory_plan->containers().empty();
      for (const Node* n : g->nodes())  // why each Concat copies, for the log
        if (n->opType() == "Concat")
          std::cout << what << " " << n->name() << ": "
                    << concatInPlaceProblem(*n, plan, rk3588(), in_place.placement, kArenaAlignment) << "\n";
      expectRuntimeEqualsSimulator(in_place, what);
    }
  }
  EXPECT_GE(nested_models, 1);  // shufflenet's channel-shuffle Concats, in FP16 at least
}

}  // namespace
}  // namespace npuc::memory
