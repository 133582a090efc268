// The compile driver (compile/compiled_model.h): one placement decides the program, the memory plan
// and the reports; the blob is the CompiledModel's serialization and loads back as the same model;
// the typed options round-trip through the one META codec; a blob whose parts disagree is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "compile/options_codec.h"
#include "compile/py_literal.h"
#include "lower/lower.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant_test_util.h"
#include "runtime/program_runtime_loader.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

constexpr const char* kSoc = "rk3588";

// x -> c1 -> r1 -> c2 -> r2 -> c3 -> out, 3x3 convs with random weights (16 channels, 8x8), so
// that every fused Conv+Relu could run on the NPU unless op_target moves r2.
struct ChainGraph {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  std::mt19937 rng{7};
  ChainGraph() {
    Value* v = g->addInput("x", DType::Float32, {1, 16, 8, 8});
    v = conv("c1", v);
    v = relu("r1", v);
    v = conv("c2", v);
    v = relu("r2", v);
    v = conv("c3", v);
    g->addOutput(v);
  }
  Value* conv(const std::string& name, Value* in) {
    Tensor w(DType::Float32, {16, 16, 3, 3});
    std::normal_distribution<float> normal(0.f, 0.1f);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = normal(rng);
    Node* n = g->appendNode("Conv", {in, g->addConstant(std::move(w), name + "_w")}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
    n->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
    n->output()->setType(DType::Float32, in->shape());
    return n->output();
  }
  Value* relu(const std::string& name, Value* in) {
    Node* n = g->appendNode("Relu", {in}, 1, name);
    n->output()->setType(DType::Float32, in->shape());
    return n->output();
  }
  const Node* node(const std::string& name) const {
    for (const Node* n : g->nodes())
      if (n->name() == name) return n;
    return nullptr;
  }
};

CompileOptions optionsFor(const quant::QuantPlan* plan, OpTargetMap op_target = {}) {
  CompileOptions o;
  o.quantized = plan != nullptr;
  o.op_target = std::move(op_target);
  return o;
}

CompiledModel roundTrip(const CompiledModel& m) {
  return readCompiledModel(serializeCompiledModel(m), std::nullopt, "<test>");
}

TEST(PyLiteral, FloatsAreWrittenAsCPythonReprWritesThem) {
  using pyliteral::repr;
  EXPECT_EQ(repr(0.0), "0.0");
  EXPECT_EQ(repr(-0.0), "-0.0");
  EXPECT_EQ(repr(127.5), "127.5");
  EXPECT_EQ(repr(58.395), "58.395");
  EXPECT_EQ(repr(3.0), "3.0");
  EXPECT_EQ(repr(0.1), "0.1");
  EXPECT_EQ(repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(repr(0.0001), "0.0001");
  EXPECT_EQ(repr(0.00001), "1e-05");
  EXPECT_EQ(repr(1e16), "1e+16");
  EXPECT_EQ(repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(repr(12345678901234567.0), "1.2345678901234568e+16");
  EXPECT_EQ(repr(1.5e-300), "1.5e-300");
  EXPECT_EQ(repr(std::vector<std::vector<double>>{{0, 0, 0}, {255}}), "[[0.0, 0.0, 0.0], [255.0]]");
}

TEST(PyLiteral, StringsQuoteAndEscapeAsCPythonDoes) {
  using pyliteral::repr;
  EXPECT_EQ(repr(std::string("w8a8")), "'w8a8'");
  EXPECT_EQ(repr(std::string("it's")), "\"it's\"");
  EXPECT_EQ(repr(std::string("it's \"q\"")), "'it\\'s \"q\"'");
  EXPECT_EQ(repr(std::string("a\\b\n\t\x01")), "'a\\\\b\\n\\t\\x01'");
  EXPECT_EQ(repr(std::vector<std::string>{"a", "b"}), "['a', 'b']");
  EXPECT_EQ(repr(std::map<std::string, std::string>{{"b", "npu"}, {"a", "cpu"}}), "{'a': 'cpu', 'b': 'npu'}");
  for (const std::string s : {"", "it's \"q\"", "a\\b\n\t\x01\x7f", "caf\xc3\xa9"})
    EXPECT_EQ(pyliteral::readString(repr(s)), s);
  EXPECT_EQ(pyliteral::readString("'\\u00e9\\U0001F600\\x41'"),
            "\xc3\xa9\xf0\x9f\x98\x80"
            "A");
  EXPECT_THROW(pyliteral::readString("'abc"), std::invalid_argument);
  EXPECT_THROW(pyliteral::readStringDict("{'a': 'cpu'"), std::invalid_argument);
  EXPECT_THROW(pyliteral::readStringList("['a'] x"), std::invalid_argument);
  EXPECT_THROW(pyliteral::readInt("3.5"), std::invalid_argument);
}

TEST(OptionsCodec, DefaultsAreRecordedAsTheToolkitRecordedThem) {
  const RecordedOptions want = {{"optimization_level", "3"},         {"quantized", "True"},
                                {"single_core_mode", "False"},       {"quantized_dtype", "'w8a8'"},
                                {"quantized_algorithm", "'normal'"}, {"quantized_method", "'channel'"}};
  EXPECT_EQ(encodeCompileOptions(CompileOptions{}), want);
  CompileOptions fp;
  fp.quantized = false;  // a float build records no quantization settings
  EXPECT_EQ(
      encodeCompileOptions(fp),
      (RecordedOptions{{"optimization_level", "3"}, {"quantized", "False"}, {"single_core_mode", "False"}}));
}

TEST(OptionsCodec, EveryFieldRoundTripsAndOldSpellingsRead) {
  CompileOptions o;
  o.optimization_level = 1;
  o.quantized_algorithm = QuantAlgorithm::KlDivergence;
  o.quantized_method = QuantMethod::Layer;
  o.single_core_mode = true;
  o.custom_string = "it's \"x\"\n";
  o.disable_passes = {"fold_focus", "fuse_glu"};
  o.hybrid_layers = {"conv'1"};
  o.op_target = {{"Conv", "cpu"}, {"r2", "npu"}};
  o.mean_values = {{123.675, 116.28, 103.53}};
  o.std_values = {{58.395, 57.12, 57.375}};
  EXPECT_EQ(decodeCompileOptions(encodeCompileOptions(o), "<t>"), o);
  // What earlier Toolkits wrote: insertion-ordered dicts, RKNN's dtype alias, ints in the means.
  const CompileOptions old = decodeCompileOptions({{"op_target", "{'r2': 'cpu', \"it's\": 'npu'}"},
                                                   {"quantized_dtype", "'asymmetric_quantized-8'"},
                                                   {"mean_values", "[[0, 0.5, 1e-05]]"},
                                                   {"some_future_key", "{'x': 1}"}},
                                                  "<t>");
  EXPECT_EQ(old.op_target, (OpTargetMap{{"it's", "npu"}, {"r2", "cpu"}}));
  EXPECT_EQ(old.quantized_dtype, QuantDType::W8A8);
  EXPECT_EQ(old.mean_values, (std::vector<std::vector<double>>{{0, 0.5, 1e-05}}));
}

TEST(OptionsCodec, MalformedRecordsAreBlobErrorsNamingTheOption) {
  for (const RecordedOptions& bad :
       {RecordedOptions{{"op_target", "{'r2': 'cpu'"}}, RecordedOptions{{"op_target", "{'r2': 'gpu'}"}},
        RecordedOptions{{"quantized_method", "'diagonal'"}},
        RecordedOptions{{"single_core_mode", "'yes'"}}}) {
    try {
      decodeCompileOptions(bad, "m.npub");
      FAIL() << bad.begin()->second;
    } catch (const BlobError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("m.npub"), std::string::npos) << msg;
      EXPECT_NE(msg.find(bad.begin()->first == "op_target" ? "r2" : bad.begin()->first), std::string::npos)
          << msg;
    }
  }
}

// An op_target model (FP16 and INT8): the program runs r2 as a CPU op, the memory plan keeps r2's
// output on the host, the blob loads back as the same model, and the program runtime's outputs
// equal the simulator's bit for bit.
TEST(CompiledModel, OpTargetModelCarriesItsPlacementThroughTheBlob) {
  ChainGraph c;
  const SocProfile& soc = socProfile(kSoc);
  const quant::QuantPlan q = ::npuc::testing::calibratedPlan(*c.g);
  for (const quant::QuantPlan* qp : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    const std::string what = qp ? "int8" : "fp16";
    const CompiledModel built = compileModel(c.g, qp, soc, optionsFor(qp, {{"r2", "cpu"}}));
    EXPECT_EQ(built.placement.deviceOf(c.node("r2")), Device::Cpu) << what;
    const CompiledModel b = roundTrip(built);
    ASSERT_TRUE(b.program && b.memory_plan) << what;
    EXPECT_EQ(*b.program, *built.program) << what;
    EXPECT_EQ(*b.memory_plan, *built.memory_plan) << what;
    EXPECT_EQ(b.options, built.options) << what;
    std::vector<std::string> cpu_ops;
    for (const lower::CpuOp& op : b.program->cpu_ops)
      cpu_ops.push_back(b.graph->nodeList().at(op.node)->name());
    EXPECT_EQ(cpu_ops, std::vector<std::string>{"r2"}) << what;
    bool r2_on_host = false;
    for (const memory::PlannedBuffer& buf : b.memory_plan->buffers)
      r2_on_host |= buf.value == c.node("r2")->output()->name() && buf.format == memory::BufferFormat::Host;
    EXPECT_TRUE(r2_on_host) << what;
    EXPECT_EQ(serializeCompiledModel(b), serializeCompiledModel(built))
        << what << ": load + write changed bytes";

    auto sim = qp ? std::make_shared<const quant::QuantizedExecutor>(*b.graph, *qp)
                  : std::make_shared<const quant::QuantizedExecutor>(*b.graph);
    std::string why_not = "unset";
    auto rt = runtime::programRuntimeFor(b, sim, &why_not);
    ASSERT_NE(rt, nullptr) << what << ": " << why_not;
    for (uint32_t seed : {1u, 2u}) {
      const std::vector<Tensor> inputs = ::npuc::testing::randomNormalInputs(*b.graph, seed);
      const std::vector<Tensor> got = rt->run(inputs), want = sim->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << what << " " << i;
    }
  }
}

// A blob whose parts disagree is refused on load: a program or a plan for another placement than
// the recorded options give, or a recorded `quantized` without the quantization section.
TEST(CompiledModel, BlobWhosePartsDisagreeIsRefused) {
  ChainGraph c;
  const SocProfile& soc = socProfile(kSoc);
  const CompiledModel moved = compileModel(c.g, nullptr, soc, optionsFor(nullptr, {{"r2", "cpu"}}));
  const CompiledModel plain = compileModel(c.g, nullptr, soc, optionsFor(nullptr));

  CompiledModel unrecorded = moved;  // program with r2 on the CPU, options without op_target
  unrecorded.options.op_target.clear();
  unrecorded.memory_plan = plain.memory_plan;
  try {
    roundTrip(unrecorded);
    FAIL() << "a program with r2 on the CPU loaded for the default placement";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("'r2'"), std::string::npos) << e.what();
  }
  CompiledModel stale_plan = moved;  // the plan of the default placement
  stale_plan.memory_plan = plain.memory_plan;
  try {
    roundTrip(stale_plan);
    FAIL() << "a default-placement plan was accepted for an op_target program";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("MPLN"), std::string::npos) << e.what();
  }
  CompiledModel claims_int8 = plain;
  claims_int8.options.quantized = true;
  EXPECT_THROW(roundTrip(claims_int8), BlobError);
  EXPECT_THROW(compileModel(c.g, nullptr, soc, CompileOptions{}), ConfigError);  // quantized, no plan
}

// eval_perf of a hybrid model reads the program: every row has the dtype and device of its task.
TEST(CompiledModel, PerfRowsCarryEachTasksDtypeAndTarget) {
  ChainGraph c;
  quant::Calibrator calibrator(*c.g);
  calibrator.addSample(::npuc::testing::randomNormalInputs(*c.g, 0));
  quant::QuantizerOptions qo;
  qo.hybrid_layers = {"c2"};
  const quant::QuantPlan plan = quant::buildQuantPlan(*c.g, calibrator.ranges({}), qo);
  const CompiledModel m =
      roundTrip(compileModel(c.g, &plan, socProfile(kSoc), optionsFor(&plan, {{"c3", "cpu"}})));
  const perf::PerfReport report = compiledPerf(m);
  std::vector<std::pair<std::string, std::string>> rows, tasks;
  for (const perf::PerfRow& r : report.rows)
    rows.push_back({r.full_name, r.data_type + "@" + deviceName(r.target)});
  const std::vector<Node*> nodes = m.graph->nodeList();
  for (const lower::Task& t : m.program->tasks) {
    if (t.kind == lower::TaskKind::Convert) continue;
    std::string name;
    for (uint32_t i : t.nodes) name += (name.empty() ? "" : "+") + nodes.at(i)->name();
    const std::string dtype = t.kind == lower::TaskKind::Cpu       ? "FP32"
                              : t.compute == lower::ElemType::Int8 ? "INT8"
                                                                   : "FP16";
    tasks.push_back({name, dtype + "@" + (t.kind == lower::TaskKind::Cpu ? "CPU" : "NPU")});
  }
  EXPECT_EQ(rows, tasks);
  EXPECT_EQ(rows, (std::vector<std::pair<std::string, std::string>>{
                      {"c1+r1", "INT8@NPU"}, {"c2+r2", "FP16@NPU"}, {"c3", "FP32@CPU"}}));
}

// eval_memory of a model compiled in memory equals that of its blob loaded back.
TEST(CompiledModel, MemoryReportIsTheSameBeforeAndAfterTheBlob) {
  ChainGraph c;
  const quant::QuantPlan q = ::npuc::testing::calibratedPlan(*c.g);
  const CompiledModel built = compileModel(c.g, &q, socProfile(kSoc), optionsFor(&q));
  const CompiledModel loaded = roundTrip(built);
  const memory::MemoryReport a = compiledMemory(built), b = compiledMemory(loaded);
  EXPECT_EQ(a.total_bytes, b.total_bytes);
  EXPECT_EQ(a.other_bytes, b.other_bytes);
  EXPECT_EQ(a.blob_bytes, serializeCompiledModel(built).size());
  EXPECT_FALSE(a.plan_from_blob);
  EXPECT_TRUE(b.plan_from_blob);
}

}  // namespace
}  // namespace npuc
