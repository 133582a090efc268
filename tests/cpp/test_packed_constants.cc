// Weights stored once (blob format 2.0, issue #23): a weight an NPU task packs is written only as
// its NWGT entry, rebuilt as float32 on load so the simulator reads exactly what it read in
// memory; a weight another reader needs keeps its float bytes in WGHT; a record that points
// anywhere else is refused, and so is one in a blob claiming format 1.2.
#include <gtest/gtest.h>

#include <random>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob_test_util.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "lower/program_codec.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/quantized_executor.h"
#include "quant_test_util.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

// x -> Conv c1 (+bias) -> Relu -> Conv c2 -> Gemm fc (transB = 0, so its weight packs transposed).
std::shared_ptr<Graph> convGemmGraph() {
  auto g = std::make_shared<Graph>();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 0.2f);
  auto random = [&](Shape s) {
    Tensor t(DType::Float32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  Value* x = g->addInput("x", DType::Float32, {1, 8, 6, 6});
  Node* c1 = g->appendNode(
      "Conv", {x, g->addConstant(random({16, 8, 3, 3}), "c1_w"), g->addConstant(random({16}), "c1_b")}, 1,
      "c1");
  c1->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  c1->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  c1->output()->setType(DType::Float32, {1, 16, 6, 6});
  Node* r = g->appendNode("Relu", {c1->output()}, 1, "r");
  r->output()->setType(DType::Float32, {1, 16, 6, 6});
  Node* c2 = g->appendNode("Conv", {r->output(), g->addConstant(random({4, 16, 6, 6}), "c2_w")}, 1, "c2");
  c2->attrs().set("kernel_shape", std::vector<int64_t>{6, 6});
  c2->output()->setType(DType::Float32, {1, 4, 1, 1});
  Node* flat = g->appendNode("Flatten", {c2->output()}, 1, "flat");
  flat->output()->setType(DType::Float32, {1, 4});
  Node* fc = g->appendNode("Gemm", {flat->output(), g->addConstant(random({4, 10}), "fc_w")}, 1, "fc");
  fc->output()->setType(DType::Float32, {1, 10});
  g->addOutput(fc->output());
  return g;
}

CompiledModel compiled(const std::shared_ptr<Graph>& g, const quant::QuantPlan* plan,
                       OpTargetMap op_target = {}) {
  CompileOptions o;
  o.quantized = plan != nullptr;
  o.op_target = std::move(op_target);
  return compileModel(g, plan, socProfile("rk3588"), o);
}

std::shared_ptr<const quant::QuantizedExecutor> simulatorOf(const Graph& g, const quant::QuantPlan* plan) {
  return plan ? std::make_shared<const quant::QuantizedExecutor>(g, *plan)
              : std::make_shared<const quant::QuantizedExecutor>(g);
}

uint64_t sectionSize(const std::string& blob_bytes, uint32_t kind) {
  uint64_t size = 0;
  blobtest::sectionOffset(blob_bytes, kind, &size);
  return size;
}

TEST(PackedConstants, NpuWeightsAreStoredOnceAndTheLoadedModelRunsBitIdentical) {
  const auto g = convGemmGraph();
  const quant::QuantPlan q = testing::calibratedPlan(*g);
  for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    const std::string what = plan ? "int8" : "fp16";
    const CompiledModel built = compiled(g, plan);
    const std::string bytes = serializeCompiledModel(built);
    // WGHT keeps only the bias (16 floats, one 64-byte-aligned entry); every weight is in NWGT.
    EXPECT_EQ(sectionSize(bytes, blob::kSectionWeights), 64u) << what;
    const blob::LoadedBlob raw = blob::readBlobBytes(bytes);
    std::vector<std::string> packed;
    for (const blob::PackedConstant& p : raw.packed_constants) packed.push_back(p.value);
    EXPECT_EQ(packed, (std::vector<std::string>{"c1_w", "c2_w", "fc_w"})) << what;
    for (const blob::SectionEntry& s : raw.sections) {
      if (s.kind == blob::kSectionNpuWeights || s.kind == blob::kSectionTasks) {
        EXPECT_TRUE(s.required) << what << ": the graph cannot be rebuilt without "
                                << blob::fourccName(s.kind);
      }
    }

    const CompiledModel loaded = readCompiledModel(bytes, std::nullopt, "<test>");
    EXPECT_EQ(serializeCompiledModel(loaded), bytes) << what << ": load + write changed bytes";
    for (const char* name : {"c1", "c2", "fc"}) {
      const Node* a = nullptr;
      const Node* b = nullptr;
      for (const Node* n : g->nodes()) a = n->name() == name ? n : a;
      for (const Node* n : loaded.graph->nodes()) b = n->name() == name ? n : b;
      ASSERT_TRUE(a && b) << name;
      if (plan) {  // the int8 values the simulator quantizes to are the in-memory build's
        EXPECT_TRUE(
            quant::quantizeNodeWeights(*a, q).values.bitwiseEqual(quant::quantizeNodeWeights(*b, q).values))
            << name;
      } else {  // the half bits are
        const Tensor& wa = a->input(1)->constant();
        const Tensor& wb = b->input(1)->constant();
        for (int64_t i = 0; i < wa.numel(); ++i)
          ASSERT_EQ(floatToHalf(wa.data<float>()[i]), floatToHalf(wb.data<float>()[i])) << name << " " << i;
      }
    }
    EXPECT_TRUE(loaded.graph->findValue("c1_b")->constant().bitwiseEqual(g->findValue("c1_b")->constant()));
    const auto want = simulatorOf(*g, plan);
    const auto got = simulatorOf(*loaded.graph, plan);
    for (uint32_t seed : {1u, 2u}) {
      const std::vector<Tensor> in = testing::randomNormalInputs(*g, seed);
      const std::vector<Tensor> a = want->run(in), b = got->run(in);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].bitwiseEqual(b[i])) << what << " seed " << seed;
    }
  }
}

// A CPU op's weight has no NWGT entry, so its float bytes stay in WGHT, exactly.
TEST(PackedConstants, AWeightTheCpuReadsKeepsItsFloatBytes) {
  const auto g = convGemmGraph();
  const quant::QuantPlan q = testing::calibratedPlan(*g);
  const std::string bytes = serializeCompiledModel(compiled(g, &q, {{"c2", "cpu"}}));
  EXPECT_EQ(sectionSize(bytes, blob::kSectionWeights), 64u + 4 * 16 * 6 * 6 * 4) << "bias + c2_w in float";
  const CompiledModel loaded = readCompiledModel(bytes, std::nullopt, "<test>");
  EXPECT_TRUE(loaded.graph->findValue("c2_w")->constant().bitwiseEqual(g->findValue("c2_w")->constant()));
}

// Records that do not match the program are refused naming the constant; a 1.2 blob has none.
TEST(PackedConstants, ARecordThatNoTaskBacksIsRefused) {
  const auto g = convGemmGraph();
  const quant::QuantPlan q = testing::calibratedPlan(*g);
  const CompiledModel built = compiled(g, &q);
  const std::string good = serializeCompiledModel(built);
  const blob::LoadedBlob raw = blob::readBlobBytes(good);
  ASSERT_EQ(raw.packed_constants.size(), 3u);

  blob::BlobWriteOptions opts;
  opts.soc = "rk3588";
  opts.options = raw.meta.options;
  opts.extra_sections = raw.extra_sections;
  auto pointedAt = [&](const std::string& value, const std::string& entry_of) {
    opts.packed_constants.clear();
    for (const blob::PackedConstant& p : raw.packed_constants) opts.packed_constants[p.value] = p;
    opts.packed_constants[value].offset = opts.packed_constants[entry_of].offset;
    opts.packed_constants[value].size = opts.packed_constants[entry_of].size;
    opts.packed_constants.erase(entry_of);  // that one keeps its float bytes in WGHT
    return blob::writeBlobBytes(*built.graph, opts);
  };
  // fc_w (40 elements) pointed at c1's entry: the extent fits, but the task there packs c1_w.
  try {
    readCompiledModel(pointedAt("fc_w", "c1_w"), std::nullopt, "<test>");
    FAIL() << "a packed constant backed by another node's weights loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("constant 'fc_w' is stored as NPU-packed weights"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("reads it not as the weight of its first node 'c1'"),
              std::string::npos)
        << e.what();
  }
  // c1_w (1152 elements) pointed at fc's 320-byte entry: refused before anything is allocated.
  try {
    blob::readBlobBytes(pointedAt("c1_w", "fc_w"));
    FAIL() << "a packed constant larger than its NWGT extent loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("NPU-packed constant 'c1_w' [16,8,3,3] has more elements than its"),
              std::string::npos)
        << e.what();
  }
  // The same bytes claiming format 1.2, which has no NPU-packed constants.
  std::string old = good;
  blobtest::writeField(old, blob::kOffMajor, 2, 1);
  blobtest::writeField(old, blob::kOffMinor, 2, 2);
  blobtest::resealHeaderOnly(old);
  try {
    blob::readBlobBytes(old);
    FAIL() << "a 1.2 blob with NPU-packed constants loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("which blob format 1.x does not have"), std::string::npos)
        << e.what();
  }
  // Without TASK there is nothing that says which weights NWGT holds.
  opts.extra_sections.clear();
  opts.packed_constants.clear();
  for (const blob::PackedConstant& p : raw.packed_constants) opts.packed_constants[p.value] = p;
  for (const blob::ExtraSection& s : raw.extra_sections)
    if (s.kind == blob::kSectionNpuWeights || s.kind == blob::kSectionQuant) opts.extra_sections.push_back(s);
  EXPECT_THROW(readCompiledModel(blob::writeBlobBytes(*built.graph, opts), std::nullopt, "<test>"),
               BlobError);
}

}  // namespace
}  // namespace npuc
