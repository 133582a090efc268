// The NPU activation memory plan (cpp/memory): hand-made graphs whose arena is known, sizing by
// NPU dtype / channel padding / device, fused values kept out of DRAM, the MPLN codec, the memory
// report's arithmetic, and every shared model planned within 1.05x of the lower bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "blob/blob_format.h"
#include "common/error.h"
#include "frontend/onnx_import.h"
#include "memory/arena_placement.h"
#include "memory/memory_plan_codec.h"
#include "memory/memory_report.h"
#include "memory/npu_memory_plan.h"
#include "onnx_test_util.h"
#include "passes/optimize.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant_test_util.h"
#include "runtime/memory_planner.h"

namespace npuc::memory {
namespace {

class PlanGraph {
 public:
  Graph g;
  Value* x;
  explicit PlanGraph(Shape in = {1, 16, 8, 8}) { x = g.addInput("x", DType::Float32, std::move(in)); }
  Node* conv(const std::string& name, Value* in, int64_t out_c) {
    const int64_t in_c = in->shape()[1];
    Value* w = g.addConstant(Tensor(DType::Float32, {out_c, in_c, 1, 1}), name + "_w");
    Shape out = in->shape();
    out[1] = out_c;
    return op("Conv", name, {in, w}, out);
  }
  Node* op(const std::string& type, const std::string& name, const std::vector<Value*>& inputs, Shape out) {
    Node* n = g.appendNode(type, inputs, 1, name);
    n->output()->setType(DType::Float32, std::move(out));
    return n;
  }
};

const PlannedBuffer* find(const NpuMemoryPlan& p, const std::string& value,
                          BufferFormat f = BufferFormat::Npu) {
  for (const PlannedBuffer& b : p.buffers)
    if (b.value == value && b.format == f) return &b;
  return nullptr;
}

// Independent of findPlanViolation: at every step, the live arena buffers sorted by offset must
// not overlap, and the live bytes there never exceed the claimed lower bound.
void expectSoundByBruteForce(const NpuMemoryPlan& p, const std::string& what) {
  int64_t last_step = 0;
  for (const PlannedBuffer& b : p.buffers) last_step = std::max(last_step, b.last);
  uint64_t peak = 0;
  for (int64_t t = 0; t <= last_step; ++t) {
    std::vector<const PlannedBuffer*> live;
    uint64_t bytes = 0;
    for (const PlannedBuffer& b : p.buffers) {
      if (b.home != BufferHome::Arena || b.first > t || b.last < t) continue;
      live.push_back(&b);
      bytes += b.bytes;
    }
    peak = std::max(peak, bytes);
    std::sort(live.begin(), live.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 0; i + 1 < live.size(); ++i) {
      ASSERT_LE(live[i]->offset + live[i]->bytes, live[i + 1]->offset)
          << what << ": '" << live[i]->value << "' and '" << live[i + 1]->value << "' overlap at step " << t;
    }
    for (const PlannedBuffer* b : live) ASSERT_LE(b->offset + b->bytes, p.arena_bytes) << what;
  }
  EXPECT_EQ(peak, p.lower_bound_bytes) << what;
  EXPECT_EQ(findPlanViolation(p), "") << what;
}

quant::QuantPlan int8Plan(const Graph& g) {
  quant::QuantPlan plan;
  for (const Value* v : g.values()) {
    if (v->dtype() != DType::Float32) continue;
    quant::TensorQuant q;
    q.scales = {0.05f};
    q.zero_points = {0};
    plan.tensors[v->name()] = q;
  }
  return plan;
}

TEST(NpuMemoryPlan, ChainReachesTheBoundAndFusedValuesStayOnChip) {
  PlanGraph f;
  Node* c1 = f.conv("c1", f.x, 32);
  Node* r1 = f.op("Relu", "r1", {c1->output()}, {1, 32, 8, 8});  // Conv+Relu: c1's output stays inside
  Node* c2 = f.conv("c2", r1->output(), 64);
  Node* c3 = f.conv("c3", c2->output(), 16);
  Node* c4 = f.conv("c4", c3->output(), 48);
  Node* c5 = f.conv("c5", c4->output(), 8);
  f.g.addOutput(c5->output());
  const NpuMemoryPlan p = planNpuMemory(f.g, nullptr, socProfile("rk3588"));
  EXPECT_EQ(find(p, c1->output()->name()), nullptr);  // never in DRAM
  // FP16, 8x8 pixels, rk3588 fp16 "other" alignment 8: channels already aligned.
  ASSERT_NE(find(p, r1->output()->name()), nullptr);
  EXPECT_EQ(find(p, r1->output()->name())->bytes, 32u * 64 * 2);
  EXPECT_EQ(find(p, c2->output()->name())->bytes, 64u * 64 * 2);
  // Adjacent pairs live together: the bound is the heaviest pair, c2 + c3 = (64 + 16) * 128 or
  // r1 + c2 = (32 + 64) * 128.
  EXPECT_EQ(p.lower_bound_bytes, 96u * 128);
  EXPECT_EQ(p.arena_bytes, p.lower_bound_bytes);
  // Input 16 channels, output 8: separate I/O buffers.
  EXPECT_EQ(p.ioBytes(), (16u + 8u) * 128);
  EXPECT_EQ(find(p, "x")->home, BufferHome::Input);
  EXPECT_EQ(find(p, c5->output()->name())->home, BufferHome::Output);
  expectSoundByBruteForce(p, "chain");
}

TEST(NpuMemoryPlan, DiamondReachesTheBound) {
  PlanGraph f;
  Node* stem = f.conv("stem", f.x, 32);
  Node* a = f.conv("a", stem->output(), 64);
  Node* b = f.conv("b", stem->output(), 64);
  Node* b2 = f.conv("b2", b->output(), 64);
  Node* add = f.op("Add", "add", {a->output(), b2->output()}, {1, 64, 8, 8});
  Node* head = f.conv("head", add->output(), 16);
  f.g.addOutput(head->output());
  const NpuMemoryPlan p = planNpuMemory(f.g, nullptr, socProfile("rk3588"));
  // The Add fuses into one branch's Conv (Conv+Add, the first anchor in graph order): that
  // conv's output never reaches DRAM; the other branch's output lives until the Add's task.
  const PlannedBuffer* pa = find(p, a->output()->name());
  const PlannedBuffer* pb2 = find(p, b2->output()->name());
  ASSERT_TRUE((pa == nullptr) != (pb2 == nullptr));
  const PlannedBuffer* kept = pa ? pa : pb2;
  EXPECT_EQ(kept->last, find(p, add->output()->name())->first);
  EXPECT_EQ(p.arena_bytes, p.lower_bound_bytes);
  expectSoundByBruteForce(p, "diamond");
}

TEST(NpuMemoryPlan, Int8SizesPadChannelsAndAlignOffsets) {
  PlanGraph f({1, 3, 5, 5});
  Node* c1 = f.conv("c1", f.x, 3);
  Node* c2 = f.conv("c2", c1->output(), 20);
  Node* c3 = f.conv("c3", c2->output(), 3);
  f.g.addOutput(c3->output());
  const quant::QuantPlan q = int8Plan(f.g);
  const NpuMemoryPlan p = planNpuMemory(f.g, &q, socProfile("rk3588"));
  // int8 on rk3588: channels padded to 16 ("other"), 1 byte each, rounded up to 64 bytes.
  EXPECT_EQ(find(p, c1->output()->name())->dtype, DType::Int8);
  EXPECT_EQ(find(p, c1->output()->name())->bytes, alignUp(16 * 25, kArenaAlignment));
  EXPECT_EQ(find(p, c2->output()->name())->bytes, alignUp(32 * 25, kArenaAlignment));
  // rk3566 pads int8 to 8 channels.
  const NpuMemoryPlan p66 = planNpuMemory(f.g, &q, socProfile("rk3566"));
  EXPECT_EQ(find(p66, c2->output()->name())->bytes, alignUp(24 * 25, kArenaAlignment));
  for (const PlannedBuffer& b : p.buffers) {
    EXPECT_EQ(b.offset % kArenaAlignment, 0u) << b.value;
    EXPECT_EQ(b.bytes % kArenaAlignment, 0u) << b.value;
  }
  expectSoundByBruteForce(p, "int8");
}

TEST(NpuMemoryPlan, CpuFallbackTensorsAreHostSizedWithConvertedCopies) {
  PlanGraph f;
  Node* c1 = f.conv("c1", f.x, 16);
  Node* c2 = f.conv("c2", c1->output(), 16);
  Node* c3 = f.conv("c3", c2->output(), 16);
  f.g.addOutput(c3->output());
  const quant::QuantPlan q = int8Plan(f.g);
  const SocProfile& soc = socProfile("rk3588");
  const NpuMemoryPlan p = planNpuMemory(f.g, &q, soc, partitionGraph(f.g, soc, {{"c2", "cpu"}}));
  // c2 runs on the CPU in FP32: its output is a host tensor, converted for c3 on the NPU.
  const PlannedBuffer* host = find(p, c2->output()->name(), BufferFormat::Host);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->dtype, DType::Float32);
  EXPECT_EQ(host->bytes, 16u * 64 * 4);
  const PlannedBuffer* npu = find(p, c2->output()->name(), BufferFormat::Npu);
  ASSERT_NE(npu, nullptr);
  EXPECT_EQ(npu->bytes, 16u * 64);
  // c1's int8 output is converted to FP32 for the CPU op as well.
  EXPECT_NE(find(p, c1->output()->name(), BufferFormat::Host), nullptr);
  EXPECT_NE(find(p, c1->output()->name(), BufferFormat::Npu), nullptr);
  expectSoundByBruteForce(p, "cpu fallback");
}

NpuMemoryPlan samplePlan() {
  PlanGraph f;
  Node* stem = f.conv("stem", f.x, 32);
  Node* a = f.conv("a", stem->output(), 64);
  Node* b = f.conv("b", stem->output(), 24);
  Node* cat = f.op("Concat", "cat", {a->output(), b->output()}, {1, 88, 8, 8});
  cat->attrs().set("axis", int64_t{1});
  f.g.addOutput(cat->output());
  return planNpuMemory(f.g, nullptr, socProfile("rk3588"));
}

TEST(MemoryPlanCodec, RoundTrip) {
  const NpuMemoryPlan p = samplePlan();
  ASSERT_GT(p.buffers.size(), 3u);
  const std::string bytes = encodeMemoryPlan(p);
  EXPECT_EQ(decodeMemoryPlan(bytes), p);
  EXPECT_EQ(encodeMemoryPlan(decodeMemoryPlan(bytes)), bytes);  // deterministic
}

TEST(MemoryPlanCodec, EveryTruncationIsRefused) {
  const std::string bytes = encodeMemoryPlan(samplePlan());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decodeMemoryPlan(bytes.substr(0, n), 4096), BlobError) << "truncated to " << n;
  EXPECT_THROW(decodeMemoryPlan(bytes + '\0'), BlobError);
}

TEST(MemoryPlanCodec, BadFieldsAndBrokenInvariantsAreRefusedWithTheirOffset) {
  NpuMemoryPlan p = samplePlan();
  auto refusal = [](const NpuMemoryPlan& bad) -> std::string {
    try {
      decodeMemoryPlan(encodeMemoryPlan(bad), 1000);
    } catch (const BlobError& e) {
      return e.what();
    }
    return "";
  };
  NpuMemoryPlan overlap = p;  // two arena buffers live together moved to one offset
  bool made_overlap = false;
  for (size_t i = 0; i < overlap.buffers.size() && !made_overlap; ++i) {
    for (size_t j = 0; j < overlap.buffers.size() && !made_overlap; ++j) {
      PlannedBuffer& a = overlap.buffers[i];
      PlannedBuffer& b = overlap.buffers[j];
      if (i == j || a.home != BufferHome::Arena || b.home != BufferHome::Arena) continue;
      if (a.first > b.last || b.first > a.last || a.offset + b.bytes > overlap.arena_bytes) continue;
      b.offset = a.offset;
      made_overlap = true;
    }
  }
  ASSERT_TRUE(made_overlap);
  EXPECT_NE(refusal(overlap).find("overlap"), std::string::npos) << refusal(overlap);
  NpuMemoryPlan misaligned = p;
  misaligned.buffers[1].offset += 8;
  EXPECT_NE(refusal(misaligned).find("aligned"), std::string::npos);
  NpuMemoryPlan outside = p;
  outside.arena_bytes = outside.lower_bound_bytes - outside.alignment;
  EXPECT_NE(refusal(outside), "");
  NpuMemoryPlan bound = p;
  bound.lower_bound_bytes -= bound.alignment;
  EXPECT_NE(refusal(bound).find("lower bound"), std::string::npos);
  NpuMemoryPlan alignment = p;
  alignment.alignment = 48;
  EXPECT_NE(refusal(alignment).find("MPLN section at offset 10"), std::string::npos) << refusal(alignment);
  EXPECT_NE(refusal(alignment).find("alignment 48"), std::string::npos) << refusal(alignment);
  std::string bytes = encodeMemoryPlan(p);
  bytes[0] = 9;  // version
  EXPECT_THROW(decodeMemoryPlan(bytes), BlobError);
}

TEST(MemoryReport, PartsAddUpAndWeightsArePacked) {
  PlanGraph f({1, 3, 8, 8});
  Value* w = f.g.addConstant(Tensor(DType::Float32, {8, 3, 3, 3}), "w");
  Value* bias = f.g.addConstant(Tensor(DType::Float32, {8}), "bias");
  Node* conv = f.op("Conv", "conv", {f.x, w, bias}, {1, 8, 6, 6});
  f.g.addOutput(conv->output());
  quant::QuantPlan q = int8Plan(f.g);
  q.tensors["bias"].dtype = quant::QuantDType::Int32;
  const SocProfile& soc = socProfile("rk3588");
  const MemoryReport r = memoryReport(f.g, &q, soc, planNpuMemory(f.g, &q, soc), 5000, 1200);
  // int8 weights, output channels padded to conv_out 32 and input channels to conv_in 32.
  ASSERT_EQ(r.weights.size(), 2u);
  EXPECT_EQ(r.weights[0].bytes, 32u * 32 * 9);
  EXPECT_EQ(r.weights[1].bytes, 32u * 4);  // int32 bias, padded to 32 channels (128 bytes)
  EXPECT_EQ(r.weight_bytes, 32u * 32 * 9 + 128);
  EXPECT_EQ(r.other_bytes, 3800u);
  EXPECT_EQ(r.total_bytes, r.weight_bytes + r.arena_bytes + r.io_bytes + r.other_bytes);
  EXPECT_NE(r.toText().find("Total Weight Memory"), std::string::npos);
}

// ---- shared models: every plan sound, and within 1.05x of its bound (issue #6's target)

TEST(NpuMemoryPlanModels, EverySharedModelIsSoundAndNearTheBound) {
  for (const char* file : {"mobilenet_v2.onnx", "shufflenet_v2_x0_5.onnx", "tiny_vit.onnx", "glu_net.onnx",
                           "yolo_focus.onnx", "conv_transpose_clip.onnx"}) {
    std::unique_ptr<Graph> g = ::npuc::testing::optimizedSharedModel(file);
    if (!g) NPUC_SKIP_MISSING_DEP("shared models not found");
    const quant::QuantPlan q = ::npuc::testing::calibratedPlan(*g);
    for (const char* soc : {"rk3588", "rk3566"}) {
      for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
        const std::string what = std::string(file) + " " + soc + (plan ? " int8" : " fp16");
        const NpuMemoryPlan p = planNpuMemory(*g, plan, socProfile(soc));
        expectSoundByBruteForce(p, what);
        EXPECT_LE(p.ratio(), 1.05) << what << ": arena " << p.arena_bytes << " bound " << p.lower_bound_bytes;
        EXPECT_EQ(decodeMemoryPlan(encodeMemoryPlan(p)), p) << what;
      }
    }
  }
}

// torchvision resnet50 exported by bench/export_torchvision.py, when bench/.cache holds it.
TEST(NpuMemoryPlanModels, Resnet50IfCachedIsSoundAndNearTheBound) {
  // __FILE__ may be relative to the build folder: try the repository from there and from the cwd.
  std::filesystem::path path;
  for (const std::filesystem::path& repo :
       {::npuc::testing::testsDir().parent_path(), std::filesystem::current_path(),
        std::filesystem::current_path().parent_path()}) {
    const std::filesystem::path candidate = repo / "bench" / ".cache" / "resnet50.onnx";
    if (path.empty() && std::filesystem::exists(candidate)) path = candidate;
  }
  if (path.empty()) NPUC_SKIP_MISSING_DEP("bench/.cache/resnet50.onnx not found (make test exports it)");
  std::unique_ptr<Graph> g = importOnnxFile(path.string());
  optimize(*g);
  const quant::QuantPlan q = ::npuc::testing::calibratedPlan(*g);
  for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    const NpuMemoryPlan p = planNpuMemory(*g, plan, socProfile("rk3588"));
    expectSoundByBruteForce(p, "resnet50");
    EXPECT_LE(p.ratio(), 1.05) << "arena " << p.arena_bytes << " bound " << p.lower_bound_bytes;
    std::cout << "resnet50 rk3588 " << (plan ? "int8" : "fp16") << ": arena " << p.arena_bytes << " bound "
              << p.lower_bound_bytes << " (" << p.ratio() << "x, " << p.strategy << ")\n";
  }
}

// The plain largest-first best fit misses the bound here; one of the other seed orders reaches it.
TEST(ArenaPlacement, SeedOrdersBeatPlainBestFit) {
  const std::vector<BufferRequest> reqs = {{192, 6, 9}, {64, 2, 5}, {192, 3, 3}, {128, 5, 8}};
  EXPECT_EQ(planMemory(reqs, 64).arena_bytes, 384u);
  const ArenaPlacement p = placeArena(reqs, 64);
  EXPECT_EQ(p.lower_bound_bytes, 320u);
  EXPECT_EQ(p.arena_bytes, 320u);
}

// Dense random live ranges: the search is never worse than plain best fit and never overlaps.
// Such sets can need more than the bound (it is not always reachable), so they get 1.10x; the
// 1.05x target is for real models (above).
TEST(ArenaPlacement, RandomSetsNeverWorseThanBestFitAndSound) {
  std::mt19937 rng(7);
  size_t improved = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<BufferRequest> reqs;
    const int n = 20 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      const int64_t first = rng() % 40;
      reqs.push_back({64 * (1 + rng() % 40), first, first + static_cast<int64_t>(rng() % 9)});
    }
    const size_t plain = planMemory(reqs, 64).arena_bytes;
    const ArenaPlacement p = placeArena(reqs, 64);
    EXPECT_LE(p.arena_bytes, plain) << "trial " << trial;
    improved += p.arena_bytes < plain;
    EXPECT_LE(static_cast<double>(p.arena_bytes), 1.10 * static_cast<double>(p.lower_bound_bytes)) << trial;
    for (size_t i = 0; i < reqs.size(); ++i) {
      for (size_t j = i + 1; j < reqs.size(); ++j) {
        const bool live = reqs[i].first <= reqs[j].last && reqs[j].first <= reqs[i].last;
        const bool share =
            p.offsets[i] < p.offsets[j] + reqs[j].bytes && p.offsets[j] < p.offsets[i] + reqs[i].bytes;
        ASSERT_FALSE(live && share) << "trial " << trial << ": " << i << " and " << j;
      }
    }
  }
  EXPECT_GT(improved, 10u);  // the search matters on dense sets
}

}  // namespace
}  // namespace npuc::memory
