// Issue #17's dtypes downstream of the plan, on hand-made plans (dtype_plan_util.h): int4 nibble
// packing, the NWGT entries of int16 / int4 weights (with their u8 group multipliers), a blob
// written and reloaded running bit-identically (simulator and program runtime), and the TASK codec of the new
// element types.
#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "dtype_plan_util.h"
#include "lower/program_codec.h"
#include "lower/weight_packing.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/program_runtime.h"
#include "runtime/program_runtime_loader.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

using quant::QuantScheme;
using quant::SchemeDType;

TEST(Int4Packing, LowNibbleIsTheEvenElementAndTheRoundTripIsExact) {
  const std::vector<int8_t> v = {1, -1, 7, -8, 0, 5, -7};
  const std::string packed = lower::packInt4(v.data(), v.size());
  ASSERT_EQ(packed.size(), 4u);
  EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0xF1);  // -1 (0xF) high, 1 low
  EXPECT_EQ(static_cast<uint8_t>(packed[1]), 0x87);  // -8 (0x8) high, 7 low
  EXPECT_EQ(static_cast<uint8_t>(packed[3]), 0x09);  // -7 low, odd count: high nibble 0
  EXPECT_EQ(lower::unpackInt4(packed, v.size()), v);
  const int8_t bad = 9;
  EXPECT_THROW(lower::packInt4(&bad, 1), ShapeError);
  EXPECT_THROW(lower::unpackInt4(packed, 9), BlobError);
}

TEST(Int4Packing, EntrySizesPerElementType) {
  lower::PackedWeightRef ref;
  ref.dims = {10, 64, 1, 1};
  ref.c2 = 32;
  ref.elem = lower::ElemType::Int8;
  EXPECT_EQ(lower::packedWeightBytes(ref), 640u);
  ref.elem = lower::ElemType::Int16;
  EXPECT_EQ(lower::packedWeightBytes(ref), 1280u);
  ref.elem = lower::ElemType::Int4;
  ref.multipliers = 20;  // 10 channels x 2 groups of 32
  EXPECT_EQ(lower::packedWeightBytes(ref), 320u + 20u);
}

struct Built {
  std::shared_ptr<Graph> graph;
  quant::QuantPlan plan;
  CompiledModel model;
};

Built build(const QuantScheme& scheme, const std::string& soc = "rk3588") {
  Built b;
  b.graph = testing::dtypeTestGraph();
  if (scheme.weight_group > 0) testing::zeroGroupsWithMultipliers(*b.graph, scheme.weight_group);
  b.plan = testing::handPlan(*b.graph, testing::calibratedPlan(*b.graph), scheme);
  b.model = compileModel(b.graph, &b.plan, testing::dtypeTestSoc(soc), testing::quantizedOptions(scheme));
  return b;
}

const lower::Task& taskOf(const CompiledModel& m, const std::string& node) {
  const std::vector<Node*> nodes = m.graph->nodeList();
  for (const lower::Task& t : m.program->tasks)
    if (!t.nodes.empty() && nodes.at(t.nodes.front())->name() == node) return t;
  throw Error("no task for " + node);
}

TEST(DtypeBlob, WeightsArePackedInTheSchemesTypeWithTheInt16Alignment) {
  const struct {
    QuantScheme scheme;
    lower::ElemType weight;
  } cases[] = {{QuantScheme::of(SchemeDType::W8A16), lower::ElemType::Int8},
               {QuantScheme::of(SchemeDType::W16A16I), lower::ElemType::Int16},
               {QuantScheme::of(SchemeDType::W4A16, 32), lower::ElemType::Int4}};
  const SocProfile& soc = socProfile("rk3588");
  for (const auto& c : cases) {
    const std::string what = quant::describeScheme(c.scheme);
    const Built b = build(c.scheme);
    for (const char* node : {"c1", "c2", "fc"}) {
      const lower::Task& t = taskOf(b.model, node);
      EXPECT_EQ(t.compute, lower::ElemType::Int16) << what << " " << node;
      EXPECT_EQ(t.weights.elem, c.weight) << what << " " << node;
      // The a16 schemes pack for the int16 array (conv_in 32 on rk3588, as int8).
      EXPECT_EQ(t.weights.c2,
                static_cast<uint32_t>(soc.alignment(NpuDType::Int16, AlignmentRole::ConvInput)));
      EXPECT_EQ(t.weights.size, lower::packedWeightBytes(t.weights)) << what << " " << node;
    }
    // c1: [32, 64, 1, 1] -> 2048 elements; fc: [64, 10] packed as [10, 64]: 640.
    const uint64_t c1 = taskOf(b.model, "c1").weights.size, fc = taskOf(b.model, "fc").weights.size;
    if (c.weight == lower::ElemType::Int8) {
      EXPECT_EQ(c1, 2048u) << what;
    }
    if (c.weight == lower::ElemType::Int16) {
      EXPECT_EQ(c1, 4096u) << what;
    }
    if (c.weight == lower::ElemType::Int4) {
      EXPECT_EQ(c1, 1024u + 32 * 2) << what;  // nibbles + 32 channels x 2 groups of 32
      EXPECT_EQ(fc, 320u + 10 * 2) << what;
      EXPECT_EQ(taskOf(b.model, "c2").weights.multipliers, 64u * 9) << what;  // 288 = 9 groups of 32
    }
  }
}

TEST(DtypeBlob, Int4NibblesAndMultipliersAreWhatThePlanSays) {
  const Built b = build(QuantScheme::of(SchemeDType::W4A16, 32));
  const lower::Task& t = taskOf(b.model, "fc");
  const std::string entry =
      std::string(b.model.program->packed_weights.view().substr(t.weights.offset, t.weights.size));
  // fc [64, 10] is packed as [10, 64, 1, 1] with C2 = 32: element (n, k) at n * 64 + k.
  const std::vector<int8_t> q = lower::unpackInt4(entry, 640);
  const Node* fc = b.graph->findNode("fc");
  const quant::QuantizedWeights qw = quant::quantizeNodeWeights(*fc, b.plan);
  for (int64_t k = 0; k < 64; ++k)
    for (int64_t n = 0; n < 10; ++n)
      ASSERT_EQ(q[static_cast<size_t>(n * 64 + k)], qw.values.data<int8_t>()[k * 10 + n]) << k << "," << n;
  const std::vector<int32_t>& m = b.plan.at("fc_w").group_multipliers;
  ASSERT_EQ(m.size(), 20u);
  for (size_t i = 0; i < m.size(); ++i) EXPECT_EQ(static_cast<uint8_t>(entry[320 + i]), m[i]) << i;
  EXPECT_GT(*std::max_element(m.begin(), m.end()), 1);
}

// The blob of each scheme reloads to the same program, plan and weights; the simulator runs the
// loaded model bit-identically to the in-memory build.
TEST(DtypeBlob, WrittenAndReloadedRunsBitIdentical) {
  for (const QuantScheme& scheme :
       {QuantScheme::of(SchemeDType::W8A16), QuantScheme::of(SchemeDType::W16A16I),
        QuantScheme::of(SchemeDType::W4A16, 32)}) {
    const std::string what = quant::describeScheme(scheme);
    const Built b = build(scheme);
    const std::string bytes = serializeCompiledModel(b.model);
    const CompiledModel loaded = readCompiledModel(bytes, std::nullopt, "<test>");
    EXPECT_EQ(serializeCompiledModel(loaded), bytes) << what << ": load + write changed bytes";
    ASSERT_TRUE(loaded.quant_plan) << what;
    EXPECT_EQ(loaded.quant_plan->scheme, scheme) << what;
    EXPECT_EQ(loaded.quant_plan->at("c2_w").group_multipliers, b.plan.at("c2_w").group_multipliers) << what;
    EXPECT_TRUE(*loaded.program == *b.model.program) << what;
    for (const char* name : {"c1", "c2", "fc"}) {
      const Node* a = b.graph->findNode(name);
      const Node* l = loaded.graph->findNode(name);
      ASSERT_TRUE(a && l) << name;
      EXPECT_TRUE(quant::quantizeNodeWeights(*a, b.plan)
                      .values.bitwiseEqual(quant::quantizeNodeWeights(*l, *loaded.quant_plan).values))
          << what << " " << name;
    }
    const quant::QuantizedExecutor want(*b.model.graph, *b.model.quant_plan);
    auto got = std::make_shared<const quant::QuantizedExecutor>(*loaded.graph, *loaded.quant_plan);
    // The loaded blob's program runtime (its tasks over the planned arena) runs it too.
    std::string why_not;
    const auto program_rt = runtime::programRuntimeFor(loaded, got, &why_not);
    ASSERT_NE(program_rt, nullptr) << what << ": " << why_not;
    for (uint32_t seed : {1u, 2u}) {
      const std::vector<Tensor> in = testing::randomNormalInputs(*b.model.graph, seed);
      const std::vector<Tensor> x = want.run(in), y = got->run(in), z = program_rt->run(in);
      ASSERT_EQ(x.size(), y.size());
      ASSERT_EQ(x.size(), z.size());
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(x[i].bitwiseEqual(y[i])) << what << " seed " << seed;
        EXPECT_TRUE(x[i].bitwiseEqual(z[i])) << what << " seed " << seed << " (program runtime)";
      }
    }
  }
}

// Int16 / int4 weights are stored once, as their NWGT entry, when the rebuilt float weight
// quantizes back to the same integers (it does here: q * scale divided by the same scale).
TEST(DtypeBlob, Int16AndInt4WeightsAreStoredOnce) {
  for (const QuantScheme& scheme :
       {QuantScheme::of(SchemeDType::W16A16I), QuantScheme::of(SchemeDType::W4A16, 32)}) {
    const Built b = build(scheme);
    const blob::LoadedBlob raw = blob::readBlobBytes(serializeCompiledModel(b.model));
    std::vector<std::string> packed;
    for (const blob::PackedConstant& p : raw.packed_constants) packed.push_back(p.value);
    EXPECT_EQ(packed, (std::vector<std::string>{"c1_w", "c2_w", "fc_w"})) << quant::describeScheme(scheme);
  }
}

TEST(DtypeBlob, TaskCodecCarriesTheNewElementTypes) {
  const Built b = build(QuantScheme::of(SchemeDType::W4A16, 64));
  const lower::LoweredProgram& p = *b.model.program;
  const lower::ProgramSections enc = lower::encodeProgram(p);
  const lower::LoweredProgram back = lower::decodeProgram(enc);
  EXPECT_TRUE(back == p);
  EXPECT_EQ(taskOf(b.model, "c1").weights.multipliers, 32u);  // 64 / 64: one group per channel
}

}  // namespace
}  // namespace npuc
