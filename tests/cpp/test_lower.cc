// Lowering to NPU tasks (cpp/lower): task per fusion group, tiling recorded, explicit boundary
// converts, pipeline deduplication, the TASK/PIPE/CPUO/NWGT codec (round trip and refusal of
// corrupted sections), NC1HWC2 weight packing, and a blob round trip with verification.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "blob/blob.h"
#include "blob_test_util.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "lower/lower.h"
#include "lower/pipeline_dedup.h"
#include "lower/program_codec.h"
#include "lower/weight_packing.h"
#include "perf_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "target/soc_profile.h"

namespace npuc::lower {
namespace {

using perf::testing::PerfGraph;

// x -> c1+relu -> c2 -> relu2 (forced to CPU) -> c3 -> out
struct MixedGraph {
  PerfGraph p;
  Node *c2 = nullptr, *r2 = nullptr, *c3 = nullptr;
  MixedGraph() {
    Value* x = p.input("x", {1, 16, 8, 8});
    Node* c1 = p.conv("c1", x, 16, 3);
    Node* r1 = p.op("Relu", "r1", {c1->output()});
    c2 = p.conv("c2", r1->output(), 16, 3);
    r2 = p.op("Relu", "r2", {c2->output()});
    c3 = p.conv("c3", r2->output(), 16, 3);
    p.g.addOutput(c3->output());
  }
};

LoweredProgram lowerMixed(const Graph& g) {
  LowerOptions o;
  o.op_target = {{"r2", "cpu"}};
  return lowerGraph(g, socProfile("rk3588"), o);
}

TEST(Lower, OneTaskPerFusionGroupAndCpuOpsStayOps) {
  MixedGraph m;
  LoweredProgram prog = lowerMixed(m.p.g);
  verifyProgram(prog, m.p.g);
  std::vector<std::string> npu_patterns;
  for (const Task& t : prog.tasks)
    if (t.kind == TaskKind::Npu) npu_patterns.push_back(t.pattern);
  EXPECT_EQ(npu_patterns, (std::vector<std::string>{"Conv+Relu", "Conv", "Conv"}));
  ASSERT_EQ(prog.cpu_ops.size(), 1u);
  EXPECT_EQ(prog.cpu_ops[0].op_type, "Relu");
  EXPECT_NE(prog.cpu_ops[0].reason.find("op_target"), std::string::npos) << prog.cpu_ops[0].reason;
  for (const Task& t : prog.tasks)
    if (t.kind == TaskKind::Npu) {
      EXPECT_TRUE(t.tile.tiled);
      EXPECT_GE(t.tile.tiles, 1);
      EXPECT_EQ(t.compute, ElemType::Float16);  // no plan: a float build
    }
}

// ResNet's downsample block: the main branch's Conv+Relu+Add group reads the shortcut Conv's
// output, which the graph orders after the group's anchor. The task must run after it (found on
// torchvision resnet50: "value ... is read before any task produces it").
TEST(Lower, ResidualGroupRunsAfterAShortcutProducedBehindItsAnchor) {
  PerfGraph p;
  Value* x = p.input("x", {1, 16, 8, 8});
  Node* main = p.conv("main", x, 16, 3);
  Node* shortcut = p.conv("shortcut", x, 16, 1);
  Node* add = p.op("Add", "add", {main->output(), shortcut->output()});
  Node* relu = p.op("Relu", "relu", {add->output()});
  p.g.addOutput(relu->output());
  LoweredProgram prog = lowerGraph(p.g, socProfile("rk3588"), LowerOptions{});
  EXPECT_NO_THROW(verifyProgram(prog, p.g));
  std::vector<std::string> npu_patterns;
  for (const Task& t : prog.tasks)
    if (t.kind == TaskKind::Npu) npu_patterns.push_back(t.pattern);
  // The shortcut Conv runs first, then the main branch with its fused residual Add.
  EXPECT_EQ(npu_patterns, (std::vector<std::string>{"Conv", "Conv+Add", "Relu"}));
}

TEST(Lower, ConvertAtEveryBoundary) {
  MixedGraph m;
  LoweredProgram prog = lowerMixed(m.p.g);
  // x (host) -> NPU, c2 (NPU) -> CPU relu, r2 (host) -> NPU c3, c3 (NPU) -> graph output (host).
  std::vector<std::string> converts;
  for (const Task& t : prog.tasks)
    if (t.kind == TaskKind::Convert) {
      const ProgramTensor& to = prog.tensors[t.outputs[0]];
      const ProgramTensor& from = prog.tensors[t.inputs[0]];
      EXPECT_NE(to.device, from.device);
      if (to.device == TensorDevice::Npu) {
        EXPECT_EQ(to.layout, TensorLayout::Nc1hwc2);
        EXPECT_EQ(to.c2, static_cast<uint32_t>(
                             socProfile("rk3588").alignment(NpuDType::Float16, AlignmentRole::Other)));
      } else {
        EXPECT_EQ(to.layout, TensorLayout::Nchw);
      }
      converts.push_back(to.value + (t.convert.direction == ConvertDirection::ToNpu ? ">npu" : ">host"));
    }
  const std::string c2 = m.c2->output()->name(), r2 = m.r2->output()->name(), c3 = m.c3->output()->name();
  EXPECT_EQ(converts, (std::vector<std::string>{"x>npu", c2 + ">host", r2 + ">npu", c3 + ">host"}));
}

TEST(Lower, LargeConvIsTiled) {
  PerfGraph p;
  Value* x = p.input("x", {1, 256, 160, 160});
  Node* c = p.conv("big", x, 256, 3);
  p.g.addOutput(c->output());
  perf::TilingCache cache;
  LowerOptions o;
  o.tiling_cache = &cache;
  LoweredProgram prog = lowerGraph(p.g, socProfile("rk3588"), o);
  const Task* npu = nullptr;
  for (const Task& t : prog.tasks)
    if (t.kind == TaskKind::Npu) npu = &t;
  ASSERT_NE(npu, nullptr);
  EXPECT_GT(npu->tile.tiles, 1);
  EXPECT_EQ(cache.size(), 1u);  // the decision went through the tuning cache
  EXPECT_EQ(summarize(prog).tiled_tasks, 1);
}

TEST(Lower, IdenticalConvsSharePipelines) {
  PerfGraph p;
  Value* v = p.input("x", {1, 32, 16, 16});
  for (int i = 0; i < 6; ++i)
    v = p.op("Relu", "r" + std::to_string(i), {p.conv("c" + std::to_string(i), v, 32, 3)->output()})
            ->output();
  Node* other = p.conv("odd", v, 64, 3);  // a new shape: its own pipeline
  p.g.addOutput(other->output());
  LoweredProgram prog = lowerGraph(p.g, socProfile("rk3588"), {});
  ProgramSummary s = summarize(prog);
  EXPECT_EQ(s.npu_tasks, 7);
  EXPECT_EQ(s.pipelines, 2);
  EXPECT_DOUBLE_EQ(s.reuse_rate, 1.0 - 2.0 / 7.0);
  EXPECT_EQ(prog.tasks[1].pipeline, prog.tasks[2].pipeline);
}

TEST(ProgramCodec, RoundTripIsExactAndDeterministic) {
  MixedGraph m;
  LoweredProgram prog = lowerMixed(m.p.g);
  ASSERT_FALSE(prog.packed_weights.empty());
  ProgramSections s = encodeProgram(prog);
  LoweredProgram back = decodeProgram(s);
  EXPECT_TRUE(back == prog);
  ProgramSections again = encodeProgram(lowerMixed(m.p.g));
  EXPECT_EQ(again.tasks, s.tasks);
  EXPECT_EQ(again.pipelines, s.pipelines);
  EXPECT_EQ(again.cpu_ops, s.cpu_ops);
  EXPECT_EQ(again.packed_weights, s.packed_weights);
}

TEST(ProgramCodec, EveryTruncationIsRefused) {
  MixedGraph m;
  ProgramSections s = encodeProgram(lowerMixed(m.p.g));
  for (std::string ProgramSections::*field :
       {&ProgramSections::tasks, &ProgramSections::pipelines, &ProgramSections::cpu_ops})
    for (size_t len = 0; len < (s.*field).size(); ++len) {
      ProgramSections cut = s;
      (cut.*field).resize(len);
      EXPECT_THROW(decodeProgram(cut), BlobError) << len;
    }
}

TEST(ProgramCodec, CorruptedFieldsAreRefusedOrCaughtByVerify) {
  MixedGraph m;
  LoweredProgram prog = lowerMixed(m.p.g);
  ProgramSections s = encodeProgram(prog);
  // A flipped byte anywhere in TASK or PIPE: either the decoder refuses it, or the decoded
  // program differs and verifyProgram (against the graph) refuses it, or it is a field that only
  // changes a tile figure / layout code; it must never crash.
  int refused = 0, total = 0;
  for (std::string ProgramSections::*field : {&ProgramSections::tasks, &ProgramSections::pipelines})
    for (size_t i = 0; i < (s.*field).size(); ++i) {
      ProgramSections bad = s;
      (bad.*field)[i] = static_cast<char>((bad.*field)[i] ^ 0x5A);
      ++total;
      try {
        LoweredProgram p = decodeProgram(bad);
        verifyProgram(p, m.p.g);
      } catch (const BlobError&) {
        ++refused;
      }
    }
  EXPECT_GT(refused, total / 2) << refused << " of " << total;
  // Specific fields: a pipeline digest, a version, a weight range outside NWGT.
  ProgramSections bad = s;
  bad.pipelines[4] ^= 1;  // first digest byte
  EXPECT_THROW(decodeProgram(bad), BlobError);
  bad = s;
  bad.tasks[0] = 9;
  EXPECT_THROW(decodeProgram(bad), BlobError);
  bad = s;
  bad.packed_weights = s.packed_weights.slice(0, s.packed_weights.size() - 1);
  EXPECT_THROW(decodeProgram(bad), BlobError);
}

TEST(ProgramVerify, RefusesAProgramThatDoesNotCoverTheGraph) {
  MixedGraph m;
  LoweredProgram prog = lowerMixed(m.p.g);
  LoweredProgram dropped = prog;
  for (size_t i = 0; i < dropped.tasks.size(); ++i)
    if (dropped.tasks[i].kind == TaskKind::Cpu) {
      dropped.tasks.erase(dropped.tasks.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  for (size_t i = 0; i < dropped.tasks.size(); ++i) dropped.tasks[i].id = static_cast<uint32_t>(i);
  EXPECT_THROW(verifyProgram(dropped, m.p.g), BlobError);
  LoweredProgram swapped = prog;
  std::swap(swapped.tasks[1], swapped.tasks[2]);  // reads before writes
  swapped.tasks[1].id = 1;
  swapped.tasks[2].id = 2;
  EXPECT_THROW(verifyProgram(swapped, m.p.g), BlobError);
}

TEST(WeightPacking, RoundTripWithMisalignedChannels) {
  for (int64_t c : {1, 5, 16, 33}) {
    const Nchw dims{3, c, 3, 2};
    std::vector<int8_t> src(static_cast<size_t>(3 * c * 3 * 2));
    std::iota(src.begin(), src.end(), int8_t{1});
    const int64_t c2 = 16;
    std::string packed = packNc1hwc2(src.data(), dims, c2, 1);
    EXPECT_EQ(packed.size(), static_cast<size_t>(3 * ((c + 15) / 16) * 3 * 2 * 16));
    // Element (n=1, c=last, h=2, w=1) sits at [1, (c-1)/16, 2, 1, (c-1)%16].
    const int64_t cl = c - 1, c1 = (c + 15) / 16;
    const size_t at = static_cast<size_t>((((1 * c1 + cl / 16) * 3 + 2) * 2 + 1) * 16 + cl % 16);
    EXPECT_EQ(static_cast<int8_t>(packed[at]), src[static_cast<size_t>(((1 * c + cl) * 3 + 2) * 2 + 1)]);
    // Padding lanes are zero: count the non-zero bytes (src has no zero... except wraps at 256).
    std::string back = unpackNc1hwc2(packed, dims, c2, 1);
    ASSERT_EQ(back.size(), src.size());
    EXPECT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0) << "c=" << c;
    size_t nonzero = 0;
    for (char b : packed) nonzero += b != 0;
    size_t src_nonzero = 0;
    for (int8_t b : src) src_nonzero += b != 0;
    EXPECT_EQ(nonzero, src_nonzero);
  }
  std::vector<uint16_t> half(2 * 3 * 1 * 1, 0xABCD);
  std::string p = packNc1hwc2(half.data(), {2, 3, 1, 1}, 8, 2);
  EXPECT_EQ(p.size(), 2u * 8 * 2);
  EXPECT_THROW(unpackNc1hwc2(p.substr(1), {2, 3, 1, 1}, 8, 2), BlobError);
  EXPECT_THROW(packNc1hwc2(half.data(), {2, 3, 1, 1}, 0, 2), ShapeError);
}

// Random weights, so packing mistakes show up as value differences.
void randomizeWeights(Graph& g) {
  uint32_t state = 12345;
  for (Node* n : g.nodes()) {
    if (n->inputs().size() < 2 || !n->input(1) || !n->input(1)->isConstant()) continue;
    Tensor w(DType::Float32, n->input(1)->shape());
    float* p = static_cast<float*>(w.raw());
    for (int64_t i = 0; i < w.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      p[i] = static_cast<float>(static_cast<int32_t>(state >> 8) % 2001 - 1000) / 1000.0f;
    }
    n->input(1)->setConstant(std::move(w));
  }
}

TEST(WeightPacking, Int8WeightsAreTheSimulatorsAndFp16AreHalf) {
  MixedGraph m;
  randomizeWeights(m.p.g);
  quant::Calibrator calib(m.p.g);
  Tensor x(DType::Float32, {1, 16, 8, 8});
  for (int64_t i = 0; i < x.numel(); ++i) static_cast<float*>(x.raw())[i] = static_cast<float>(i % 7) - 3.0f;
  calib.addSample({x});
  const quant::QuantPlan plan = quant::buildQuantPlan(m.p.g, calib.ranges({}), {});
  LowerOptions o;
  o.op_target = {{"r2", "cpu"}};
  o.plan = &plan;
  LoweredProgram int8 = lowerGraph(m.p.g, socProfile("rk3588"), o);
  LoweredProgram fp16 = lowerMixed(m.p.g);
  const std::vector<Node*> nodes = m.p.g.nodeList();
  int checked = 0;
  for (size_t t = 0; t < int8.tasks.size(); ++t) {
    const Task& task = int8.tasks[t];
    if (!task.weights.present) continue;
    const Node& conv = *nodes[task.nodes[0]];
    EXPECT_EQ(task.compute, ElemType::Int8);
    EXPECT_EQ(task.weights.c2, 32u);  // rk3588 int8 Conv input alignment
    const std::string back =
        unpackNc1hwc2(std::string(int8.packed_weights.view().substr(task.weights.offset, task.weights.size)),
                      task.weights.dims, task.weights.c2, 1);
    const quant::QuantizedWeights qw = quant::quantizeNodeWeights(conv, plan);
    ASSERT_EQ(back.size(), qw.values.nbytes());
    EXPECT_EQ(std::memcmp(back.data(), qw.values.raw(), back.size()), 0) << conv.name();
    // The FP16 program packs the same conv's weights as IEEE half.
    const Task& half = fp16.tasks[t];
    ASSERT_TRUE(half.weights.present);
    EXPECT_EQ(half.weights.elem, ElemType::Float16);
    const std::string hb =
        unpackNc1hwc2(std::string(fp16.packed_weights.view().substr(half.weights.offset, half.weights.size)),
                      half.weights.dims, half.weights.c2, 2);
    const float* w = static_cast<const float*>(conv.input(1)->constant().raw());
    for (int64_t i = 0; i < conv.input(1)->constant().numel(); ++i) {
      uint16_t h;
      std::memcpy(&h, &hb[static_cast<size_t>(i) * 2], 2);
      ASSERT_EQ(h, floatToHalf(w[i])) << conv.name() << " element " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(WeightPacking, GemmAndMatMulWeightsPackTransposedToNK) {
  for (bool trans_b : {false, true}) {
    PerfGraph p;
    Value* a = p.input("a", {4, 40});
    Shape shape = trans_b ? Shape{24, 40} : Shape{40, 24};
    Tensor w(DType::Float32, shape);
    for (int64_t i = 0; i < w.numel(); ++i) static_cast<float*>(w.raw())[i] = static_cast<float>(i);
    Value* wv = p.g.addConstant(std::move(w), "w");
    Node* gemm = p.g.appendNode("Gemm", {a, wv}, 1, "gemm");
    gemm->attrs().set("transB", int64_t{trans_b ? 1 : 0});
    gemm->output()->setType(DType::Float32, {4, 24});
    p.g.addOutput(gemm->output());
    LoweredProgram prog = lowerGraph(p.g, socProfile("rk3588"), {});
    const Task* t = nullptr;
    for (const Task& task : prog.tasks)
      if (task.kind == TaskKind::Npu) t = &task;
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->weights.present);
    EXPECT_EQ(t->weights.dims, (Nchw{24, 40, 1, 1}));
    const std::string nk =
        unpackNc1hwc2(std::string(prog.packed_weights.view().substr(t->weights.offset, t->weights.size)),
                      t->weights.dims, t->weights.c2, 2);
    for (int64_t n = 0; n < 24; ++n)
      for (int64_t k = 0; k < 40; ++k) {
        uint16_t h;
        std::memcpy(&h, &nk[static_cast<size_t>(n * 40 + k) * 2], 2);
        const int64_t src = trans_b ? n * 40 + k : k * 24 + n;
        ASSERT_EQ(h, floatToHalf(static_cast<float>(src)))
            << "n=" << n << " k=" << k << " transB=" << trans_b;
      }
  }
}

// A graph the test owns, lent to a CompiledModel.
std::shared_ptr<const Graph> borrowed(const Graph& g) {
  return std::shared_ptr<const Graph>(&g, [](const Graph*) {});
}

CompiledModel compiledFloat(const Graph& g, OpTargetMap op_target = {}) {
  CompileOptions o;
  o.quantized = false;
  o.op_target = std::move(op_target);
  return compileModel(borrowed(g), nullptr, socProfile("rk3588"), o);
}

CompiledModel read(const std::string& bytes) {
  return readCompiledModel(bytes, std::nullopt, "<test>");
}

TEST(ProgramSections, BlobRoundTripVerifiesTheProgram) {
  MixedGraph m;
  const CompiledModel loaded = read(serializeCompiledModel(compiledFloat(m.p.g, {{"r2", "cpu"}})));
  ASSERT_TRUE(loaded.program.has_value());
  EXPECT_TRUE(*loaded.program == lowerMixed(m.p.g));
  // Packed weights are 64-byte aligned inside NWGT (itself 64-aligned in the file).
  for (const Task& t : loaded.program->tasks) {
    EXPECT_EQ(t.weights.offset % 64, 0u) << t.id;
  }
  // A blob without the lowering loads with no program.
  blob::BlobWriteOptions plain;
  plain.soc = "rk3588";
  EXPECT_FALSE(read(blob::writeBlobBytes(m.p.g, plain)).program.has_value());
}

TEST(ProgramSections, ResealedCorruptTaskSectionAndForeignProgramAreRefused) {
  MixedGraph m;
  std::string bytes = serializeCompiledModel(compiledFloat(m.p.g));
  const uint64_t task_at = blobtest::sectionOffset(bytes, blob::kSectionTasks);
  bytes[task_at] ^= 0x7;  // the codec version
  blobtest::reseal(bytes);
  blob::readBlobBytes(bytes);  // the container is fine
  EXPECT_THROW(read(bytes), BlobError);

  // A program lowered from another graph (one Conv fewer) does not verify against this one.
  PerfGraph other;
  Value* x = other.input("x", {1, 16, 8, 8});
  other.g.addOutput(other.conv("c1", x, 16, 3)->output());
  blob::BlobWriteOptions foreign;
  foreign.soc = "rk3588";
  foreign.extra_sections = programExtraSections(lowerGraph(other.g, socProfile("rk3588"), {}));
  EXPECT_THROW(read(blob::writeBlobBytes(m.p.g, foreign)), BlobError);
}

// The recorded op_target is tested with the compiled model (test_compiled_model.cc).

}  // namespace
}  // namespace npuc::lower
