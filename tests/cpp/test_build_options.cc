// The partition of a compiled model comes from its recorded build options (target/build_options.h)
// on every path: the export lowers the program and plans the memory with op_target, and the loader
// re-derives the same partition from the blob's META to check both, so an op_target blob runs on
// the program runtime bit-equal to the simulator, and a program or plan made for another
// partition than the recorded one is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "lower/lower.h"
#include "lower/program_sections.h"
#include "memory/memory_plan_codec.h"
#include "memory/memory_report.h"
#include "memory/npu_memory_plan.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quant_plan_codec.h"
#include "quant/graph/quantizer.h"
#include "quant_test_util.h"
#include "runtime/program_runtime_loader.h"
#include "target/build_options.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

constexpr const char* kSoc = "rk3588";
const BuildOptions kR2OnCpu = {{"op_target", "{'r2': 'cpu'}"}};

// x -> c1 -> r1 -> c2 -> r2 -> c3 -> out, 3x3 convs with random weights (16 channels, 8x8), so
// that every fused Conv+Relu could run on the NPU unless op_target moves r2.
struct ChainGraph {
  Graph g;
  std::mt19937 rng{7};
  ChainGraph() {
    Value* v = g.addInput("x", DType::Float32, {1, 16, 8, 8});
    v = conv("c1", v);
    v = relu("r1", v);
    v = conv("c2", v);
    v = relu("r2", v);
    v = conv("c3", v);
    g.addOutput(v);
  }
  Value* conv(const std::string& name, Value* in) {
    Tensor w(DType::Float32, {16, 16, 3, 3});
    std::normal_distribution<float> normal(0.f, 0.1f);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = normal(rng);
    Node* n = g.appendNode("Conv", {in, g.addConstant(std::move(w), name + "_w")}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
    n->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
    n->output()->setType(DType::Float32, in->shape());
    return n->output();
  }
  Value* relu(const std::string& name, Value* in) {
    Node* n = g.appendNode("Relu", {in}, 1, name);
    n->output()->setType(DType::Float32, in->shape());
    return n->output();
  }
  const Node* node(const std::string& name) const {
    for (const Node* n : g.nodes())
      if (n->name() == name) return n;
    return nullptr;
  }
};

// A blob of `g` as the export paths write it: MPLN planned and program lowered for the partition
// `plan_options` give, META recording `meta_options` (equal for an honest export).
std::string blobBytes(const Graph& g, const quant::QuantPlan* quant_plan, const BuildOptions& plan_options,
                      const BuildOptions& meta_options) {
  blob::BlobWriteOptions opts;
  opts.soc = kSoc;
  opts.options = plan_options;
  if (quant_plan)
    opts.extra_sections.push_back({blob::kSectionQuant, true, quant::encodeQuantPlan(*quant_plan)});
  opts.extra_sections.push_back(
      {blob::kSectionMemoryPlan, false, memory::encodeMemoryPlanFor(g, quant_plan, kSoc, plan_options)});
  lower::appendProgramSections(g, quant_plan, &opts);
  opts.options = meta_options;
  return blob::writeBlobBytes(g, opts);
}

memory::NpuMemoryPlan storedPlan(const blob::LoadedBlob& b) {
  for (const blob::ExtraSection& s : b.extra_sections)
    if (s.kind == blob::kSectionMemoryPlan) return memory::decodeMemoryPlan(s.bytes);
  ADD_FAILURE() << "no MPLN section";
  return {};
}

TEST(BuildPlacement, OpTargetOptionParses) {
  EXPECT_EQ(opTargetFromOption("{}"), OpTargetMap{});
  EXPECT_EQ(opTargetFromOption("{'Conv': 'cpu', \"it's\": 'npu'}"),
            (OpTargetMap{{"Conv", "cpu"}, {"it's", "npu"}}));
  EXPECT_EQ(opTargetFromOption("{'a\\'b': 'cpu'}"), (OpTargetMap{{"a'b", "cpu"}}));
  EXPECT_THROW(opTargetFromOption("{'a': 'cpu'"), ConfigError);
  EXPECT_THROW(opTargetFromOption("['a']"), ConfigError);
  EXPECT_EQ(opTargetOfBuild({{"quantized", "True"}}), OpTargetMap{});
  EXPECT_EQ(opTargetOfBuild(kR2OnCpu), (OpTargetMap{{"r2", "cpu"}}));
}

TEST(BuildPlacement, RecordedOpTargetMovesTheNodeAndBadRecordsAreBlobErrors) {
  ChainGraph c;
  const SocProfile& soc = socProfile(kSoc);
  EXPECT_EQ(placementOfBuild(c.g, soc, {}).deviceOf(c.node("r2")), Device::Npu);
  const PartitionReport moved = placementOfBuild(c.g, soc, kR2OnCpu);
  EXPECT_EQ(moved.deviceOf(c.node("r2")), Device::Cpu);
  EXPECT_EQ(moved.deviceOf(c.node("r1")), Device::Npu);
  // At export a bad op_target is the user's ConfigError; read back from a blob it is the file's.
  const BuildOptions bad_value = {{"op_target", "{'r2': 'gpu'}"}};
  const BuildOptions bad_repr = {{"op_target", "{'r2': 'cpu'"}};
  EXPECT_THROW(placementOfBuild(c.g, soc, bad_value), ConfigError);
  EXPECT_THROW(placementOfRecordedBuild(c.g, soc, bad_value), BlobError);
  EXPECT_THROW(placementOfRecordedBuild(c.g, soc, bad_repr), BlobError);
}

// An op_target blob (FP16 and INT8): the program runs r2 as a CPU op, the stored plan is the plan
// of that partition (host buffer for r2's output), the loader gives the program runtime, and its
// outputs equal the simulator's bit for bit.
TEST(BuildPlacement, OpTargetBlobCarriesItsPartitionAndRunsOnTheProgram) {
  ChainGraph c;
  const SocProfile& soc = socProfile(kSoc);
  const quant::QuantPlan q = ::npuc::testing::calibratedPlan(c.g);
  for (const quant::QuantPlan* qp : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    const std::string what = qp ? "int8" : "fp16";
    blob::LoadedBlob b = blob::readBlobBytes(blobBytes(c.g, qp, kR2OnCpu, kR2OnCpu));
    const std::optional<lower::LoweredProgram> program = lower::readProgram(b);
    ASSERT_TRUE(program.has_value()) << what;
    std::vector<std::string> cpu_ops;
    for (const lower::CpuOp& op : program->cpu_ops)
      cpu_ops.push_back(b.graph->nodeList().at(op.node)->name());
    EXPECT_EQ(cpu_ops, std::vector<std::string>{"r2"}) << what;

    const memory::NpuMemoryPlan plan = storedPlan(b);
    EXPECT_EQ(memory::findPlanViolation(plan), "") << what;
    const PartitionReport moved = placementOfBuild(*b.graph, soc, kR2OnCpu);
    EXPECT_EQ(memory::findPlanMismatch(plan, *b.graph, qp, soc, moved), "") << what;
    EXPECT_NE(memory::findPlanMismatch(plan, *b.graph, qp, soc, partitionGraph(*b.graph, soc)), "") << what;
    bool r2_on_host = false;
    for (const memory::PlannedBuffer& buf : plan.buffers)
      r2_on_host |= buf.value == c.node("r2")->output()->name() && buf.format == memory::BufferFormat::Host;
    EXPECT_TRUE(r2_on_host) << what;

    auto sim = qp ? std::make_shared<const quant::QuantizedExecutor>(*b.graph, *qp)
                  : std::make_shared<const quant::QuantizedExecutor>(*b.graph);
    std::string why_not = "unset";
    auto rt = runtime::programRuntimeForBlob(b, sim, &why_not);
    ASSERT_NE(rt, nullptr) << what << ": " << why_not;
    EXPECT_EQ(why_not, "") << what;
    for (uint32_t seed : {1u, 2u}) {
      const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(*b.graph, seed);
      const std::vector<Tensor> got = rt->run(inputs), want = sim->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << what << " " << i;
    }
  }
}

// A program or plan for another partition than the one META records is refused on load.
TEST(BuildPlacement, ProgramOrPlanForAnotherPartitionIsRefused) {
  ChainGraph c;
  // Lowered and planned with op_target, recorded without it: the program runs r2 on the CPU.
  blob::LoadedBlob unrecorded = blob::readBlobBytes(blobBytes(c.g, nullptr, kR2OnCpu, {}));
  try {
    lower::readProgram(unrecorded);
    FAIL() << "a program with r2 on the CPU loaded for the default partition";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("'r2'"), std::string::npos) << e.what();
  }
  // Recorded op_target, program lowered with it, but the plan for the default partition (what the
  // export wrote before): the loader and eval_memory refuse the plan.
  blob::BlobWriteOptions opts;
  opts.soc = kSoc;
  opts.options = kR2OnCpu;
  opts.extra_sections.push_back(
      {blob::kSectionMemoryPlan, false, memory::encodeMemoryPlanFor(c.g, nullptr, kSoc)});
  lower::appendProgramSections(c.g, nullptr, &opts);
  const std::string bytes = blob::writeBlobBytes(c.g, opts);
  blob::LoadedBlob stale = blob::readBlobBytes(bytes);
  ASSERT_TRUE(lower::readProgram(stale).has_value());  // the program itself is right
  auto sim = std::make_shared<const quant::QuantizedExecutor>(*stale.graph);
  std::string why_not;
  try {
    runtime::programRuntimeForBlob(stale, sim, &why_not);
    FAIL() << "a default-partition plan was accepted for an op_target program";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("MPLN"), std::string::npos) << e.what();
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "npuc_build_options_stale.npub").string();
  blob::writeBlob(c.g, path, opts);
  EXPECT_THROW(memory::memoryReportFromBlob(path, std::nullopt, true), BlobError);
  // Planned afresh (use_stored_plan = false) it is the recorded partition's plan.
  const memory::MemoryReport fresh = memory::memoryReportFromBlob(path, std::nullopt, false);
  EXPECT_EQ(memory::findPlanMismatch(fresh.plan, c.g, nullptr, socProfile(kSoc),
                                     placementOfBuild(c.g, socProfile(kSoc), kR2OnCpu)),
            "");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace npuc
