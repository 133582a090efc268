// The blob's limits live in one header (blob/blob_limits.h; issue #15 defect 6): every string,
// rank and section count the writer emits AT its limit is read back, and one past it is refused by
// the writer (BlobError naming the field and the limit; ConfigError for a build option), never
// written for the reader to call corrupt.
#include <gtest/gtest.h>

#include <functional>

#include "blob_test_util.h"
#include "common/error.h"
#include "compile/options_codec.h"
#include "lower/program_codec.h"
#include "memory/memory_plan_codec.h"
#include "quant/graph/quant_plan_codec.h"

namespace npuc {
namespace {

using blob::kMaxNameBytes;
using blob::kMaxTextBytes;

// A one-node graph (x -> Identity -> y), changed by `edit`, written and read back.
blob::LoadedBlob roundTrip(const std::function<void(Graph&)>& edit,
                           blob::BlobWriteOptions opts = blobtest::options()) {
  Graph g;
  g.name = "limits";
  Value* x = g.addInput("x", DType::Float32, {1, 4});
  Node* n = g.appendNode("Identity", {x}, 1, "id");
  n->output()->setName("y");
  n->output()->setType(DType::Float32, {1, 4});
  g.addOutput(n->output());
  edit(g);
  return blob::readBlobBytes(blob::writeBlobBytes(g, opts));
}

// The writer refuses with a message naming `field` and `limit`.
void expectRefusedWriting(const std::function<void(Graph&)>& edit, const std::string& field, size_t limit,
                          blob::BlobWriteOptions opts = blobtest::options()) {
  try {
    roundTrip(edit, opts);
    FAIL() << field << " one past the limit was written";
  } catch (const BlobError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot write blob: " + field, 0), 0u) << msg;
    EXPECT_NE(msg.find("limit of " + std::to_string(limit)), std::string::npos) << msg;
  }
}

Node* node(Graph& g) {
  return g.firstNode();
}

struct StringField {
  const char* field;  // as the writer's message names it
  size_t limit;
  std::function<void(Graph&, const std::string&)> set;
  std::function<std::string(const Graph&)> get;
};

TEST(BlobLimits, EveryGraphStringAtItsLimitRoundTripsAndOnePastIsRefusedWriting) {
  const StringField fields[] = {
      {"graph name", kMaxNameBytes, [](Graph& g, const std::string& s) { g.name = s; },
       [](const Graph& g) { return g.name; }},
      {"node name", kMaxNameBytes, [](Graph& g, const std::string& s) { node(g)->setName(s); },
       [](const Graph& g) { return g.firstNode()->name(); }},
      {"node domain", kMaxNameBytes, [](Graph& g, const std::string& s) { node(g)->setDomain(s); },
       [](const Graph& g) { return g.firstNode()->domain(); }},
      {"value name", kMaxNameBytes, [](Graph& g, const std::string& s) { node(g)->output()->setName(s); },
       [](const Graph& g) { return g.firstNode()->output()->name(); }},
      {"attribute name", kMaxNameBytes,
       [](Graph& g, const std::string& s) { node(g)->attrs().set(s, int64_t{1}); },
       [](const Graph& g) { return g.firstNode()->attrs().all().begin()->first; }},
      {"string attribute", kMaxTextBytes,
       [](Graph& g, const std::string& s) { node(g)->attrs().set("s", s); },
       [](const Graph& g) { return std::get<std::string>(g.firstNode()->attrs().all().at("s")); }},
      {"strings attribute element", kMaxTextBytes,
       [](Graph& g, const std::string& s) { node(g)->attrs().set("ss", std::vector<std::string>{s}); },
       [](const Graph& g) {
         return std::get<std::vector<std::string>>(g.firstNode()->attrs().all().at("ss"))[0];
       }},
      {"metadata key", kMaxNameBytes, [](Graph& g, const std::string& s) { g.metadata[s] = "v"; },
       [](const Graph& g) { return g.metadata.begin()->first; }},
      {"metadata value", kMaxTextBytes, [](Graph& g, const std::string& s) { g.metadata["k"] = s; },
       [](const Graph& g) { return g.metadata.at("k"); }},
      {"opset import domain", kMaxNameBytes, [](Graph& g, const std::string& s) { g.opset_imports[s] = 1; },
       [](const Graph& g) { return g.opset_imports.rbegin()->first; }},  // after the default ""
  };
  for (const StringField& f : fields) {
    const std::string at(f.limit, 'a');
    blob::LoadedBlob b = roundTrip([&](Graph& g) { f.set(g, at); });
    EXPECT_TRUE(f.get(*b.graph) == at) << f.field;  // (not EXPECT_EQ: it would print both strings)
    expectRefusedWriting([&](Graph& g) { f.set(g, at + "a"); }, f.field, f.limit);
  }
}

TEST(BlobLimits, RankAtTheLimitRoundTripsAndOnePastIsRefusedWriting) {
  const Shape at(blob::kMaxRank, 1);
  blob::LoadedBlob b = roundTrip([&](Graph& g) { g.addConstant(Tensor(DType::Float32, at), "c"); });
  EXPECT_EQ(b.graph->findValue("c")->shape(), at);
  Shape past = at;
  past.push_back(1);
  expectRefusedWriting([&](Graph& g) { g.addConstant(Tensor(DType::Float32, past), "c"); },
                       "constant 'c' has rank 33", blob::kMaxRank);
}

TEST(BlobLimits, SectionCountAtTheLimitRoundTripsAndOnePastIsRefusedWriting) {
  // META, GRPH, WGHT and SDIG are always there; the rest are optional sections of unknown kinds.
  auto withExtra = [](size_t n) {
    blob::BlobWriteOptions o = blobtest::options();
    for (size_t i = 0; i < n; ++i)
      o.extra_sections.push_back({blob::fourcc("X000") + static_cast<uint32_t>(i << 24), false, "x"});
    return o;
  };
  blob::LoadedBlob b = roundTrip([](Graph&) {}, withExtra(blob::kMaxSections - 4));
  EXPECT_EQ(b.sections.size(), blob::kMaxSections);
  expectRefusedWriting([](Graph&) {}, "65 sections", blob::kMaxSections, withExtra(blob::kMaxSections - 3));
}

TEST(BlobLimits, BuildOptionsAtTheLimitRoundTripAndOnePastAreRefused) {
  blob::BlobWriteOptions o = blobtest::options();
  o.options = {{std::string(kMaxNameBytes, 'k'), std::string(kMaxTextBytes, 'v')}};
  blob::LoadedBlob b = roundTrip([](Graph&) {}, o);
  EXPECT_EQ(b.meta.options, o.options);
  EXPECT_NO_THROW(checkRecordedOptionLimits(o.options));
  // The container writer refuses, and the compiled-model writer refuses first with a ConfigError
  // naming the option (what Toolkit.config reports for custom_string).
  o.options = {{"op_target", std::string(kMaxTextBytes + 1, 'v')}};
  expectRefusedWriting([](Graph&) {}, "build option value", kMaxTextBytes, o);
  try {
    checkRecordedOptionLimits(o.options);
    FAIL() << "an op_target past the limit passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("build option op_target is 16777217 bytes"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("limit of 16777216 bytes"), std::string::npos) << e.what();
  }
  o.options = {{std::string(kMaxNameBytes + 1, 'k'), "1"}};
  expectRefusedWriting([](Graph&) {}, "build option key", kMaxNameBytes, o);
  EXPECT_THROW(checkRecordedOptionLimits(o.options), ConfigError);
}

// The section codecs outside cpp/blob take the same numbers.
TEST(BlobLimits, SectionCodecNamesAtTheLimitRoundTripAndOnePastAreRefusedWriting) {
  const std::string at(kMaxNameBytes, 'v'), past = at + "v";
  auto refusedNaming = [](const std::function<void()>& encode, const std::string& field) {
    try {
      encode();
      ADD_FAILURE() << field << " past the limit was encoded";
    } catch (const BlobError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };

  quant::QuantPlan q;
  q.tensors[at] = quant::TensorQuant::perTensor({0.5f, 0});
  q.nodes[at] = quant::NodePrecision::Int8;
  EXPECT_EQ(quant::decodeQuantPlan(quant::encodeQuantPlan(q)).tensors.count(at), 1u);
  q.tensors[past] = q.tensors[at];
  refusedNaming([&] { quant::encodeQuantPlan(q); }, "quantized tensor name");

  memory::NpuMemoryPlan m;
  memory::PlannedBuffer buf;
  buf.value = at;
  buf.dtype = DType::Float32;
  buf.shape = Shape(blob::kMaxRank, 1);
  m.buffers.push_back(buf);
  EXPECT_EQ(memory::decodeMemoryPlan(memory::encodeMemoryPlan(m)).buffers.at(0).value, at);
  m.buffers[0].value = past;
  refusedNaming([&] { memory::encodeMemoryPlan(m); }, "planned buffer name");
  m.buffers[0].value = at;
  m.buffers[0].shape.push_back(1);
  refusedNaming([&] { memory::encodeMemoryPlan(m); }, "has rank 33");

  lower::LoweredProgram p;
  p.tensors.push_back({at});
  EXPECT_EQ(lower::decodeProgram(lower::encodeProgram(p)).tensors.at(0).value, at);
  p.tensors[0].value = past;
  refusedNaming([&] { lower::encodeProgram(p); }, "program tensor name");
}

}  // namespace
}  // namespace npuc
