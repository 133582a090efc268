// SoC profiles: the built-in ones load and agree with DESIGN.md; malformed profiles are refused
// with a message naming the file and the field.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

const std::string& builtinText(const std::string& file) {
  for (size_t i = 0; i < kEmbeddedSocProfiles_count; ++i)
    if (kEmbeddedSocProfiles[i].name && file == kEmbeddedSocProfiles[i].name) {
      static thread_local std::string text;
      text = kEmbeddedSocProfiles[i].text;
      return text;
    }
  throw std::runtime_error("no embedded profile " + file);
}

// Parses rk3588.yaml after `edit` changed its YAML tree; returns the ConfigError message ("" if accepted).
template <typename Edit>
std::string errorAfterEdit(Edit edit) {
  YAML::Node doc = YAML::Load(builtinText("rk3588.yaml"));
  edit(doc);
  YAML::Emitter out;
  out << doc;
  try {
    parseSocProfile(out.c_str(), "rk3588.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SocProfiles, BuiltinProfilesLoad) {
  SocCatalog c = SocCatalog::builtinOnly();
  EXPECT_EQ(c.names(), (std::vector<std::string>{"rk3562", "rk3566", "rk3576", "rk3588", "rv1106"}));
  EXPECT_EQ(c.get("rk3568").name, "rk3566");
  EXPECT_EQ(c.get("RV1103").name, "rv1106");
  EXPECT_EQ(c.get("RK3588").npu.cores, 3);
  EXPECT_EQ(c.get("rk3576").npu.cores, 2);
}

TEST(SocProfiles, ProcessCatalogueServesBuiltins) {
  EXPECT_EQ(&socProfile("rk3588"), &socProfile("RK3588"));  // one immutable cache
  std::vector<std::string> names = socNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "rk3562"), names.end());
}

TEST(SocProfiles, UnknownNameListsValidNames) {
  try {
    SocCatalog::builtinOnly().get("rk9999");
    FAIL() << "unknown SoC accepted";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("rk9999"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rk3588"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rv1103"), std::string::npos) << msg;
  }
}

// The channel-alignment table of DESIGN.md, typed in by hand: {soc, dtype, conv in, conv out, dw, other}.
struct AlignmentRow {
  const char* soc;
  NpuDType dtype;
  ChannelAlignment expected;
};
const AlignmentRow kDesignAlignment[] = {
    {"rk3566", NpuDType::Int8, {32, 16, 32, 8}},     {"rk3566", NpuDType::Int16, {16, 8, 16, 4}},
    {"rk3566", NpuDType::Float16, {16, 8, 16, 4}},   {"rk3566", NpuDType::BFloat16, {16, 8, 16, 4}},
    {"rk3588", NpuDType::Int8, {32, 32, 64, 16}},    {"rk3588", NpuDType::Int16, {32, 16, 32, 8}},
    {"rk3588", NpuDType::Float16, {32, 16, 32, 8}},  {"rk3588", NpuDType::BFloat16, {32, 16, 32, 8}},
    {"rk3588", NpuDType::TFloat32, {16, 16, 16, 4}}, {"rk3576", NpuDType::Int8, {32, 32, 64, 16}},
    {"rk3576", NpuDType::Int16, {32, 16, 32, 8}},    {"rk3576", NpuDType::Float16, {32, 16, 32, 8}},
    {"rk3576", NpuDType::BFloat16, {32, 16, 32, 8}}, {"rk3576", NpuDType::TFloat32, {16, 16, 16, 4}},
    {"rv1106", NpuDType::Int8, {32, 16, 32, 16}},    {"rv1106", NpuDType::Int16, {16, 16, 16, 8}},
    {"rk3562", NpuDType::Int8, {32, 16, 32, 16}},    {"rk3562", NpuDType::Int16, {32, 8, 16, 8}},
    {"rk3562", NpuDType::Float16, {32, 8, 16, 8}},   {"rk3562", NpuDType::BFloat16, {32, 8, 16, 8}},
    {"rk3562", NpuDType::TFloat32, {16, 8, 8, 4}},
};

TEST(SocProfiles, AlignmentTablesEqualDesign) {
  SocCatalog c = SocCatalog::builtinOnly();
  std::map<std::string, size_t> rows_per_soc;
  for (const AlignmentRow& row : kDesignAlignment) {
    const SocProfile& p = c.get(row.soc);
    SCOPED_TRACE(std::string(row.soc) + " " + npuDTypeName(row.dtype));
    EXPECT_EQ(p.alignment(row.dtype, AlignmentRole::ConvInput), row.expected.conv_in);
    EXPECT_EQ(p.alignment(row.dtype, AlignmentRole::ConvOutput), row.expected.conv_out);
    EXPECT_EQ(p.alignment(row.dtype, AlignmentRole::Depthwise), row.expected.depthwise);
    EXPECT_EQ(p.alignment(row.dtype, AlignmentRole::Other), row.expected.other);
    ++rows_per_soc[row.soc];
  }
  // No profile carries a dtype the table does not list.
  for (const auto& [soc, rows] : rows_per_soc) EXPECT_EQ(c.get(soc).channel_alignment.size(), rows) << soc;
  EXPECT_FALSE(c.get("rv1106").supportsDtype(NpuDType::Float16));
  EXPECT_THROW(c.get("rv1106").alignment(NpuDType::Float16, AlignmentRole::Other), ConfigError);
  EXPECT_THROW(c.get("rk3566").macsPerCycle(NpuDType::TFloat32), ConfigError);
}

TEST(SocProfiles, PeaksMatchPublishedTops) {
  SocCatalog c = SocCatalog::builtinOnly();
  const std::pair<const char*, double> published[] = {
      {"rk3588", 6.0}, {"rk3576", 6.0}, {"rk3566", 0.9}, {"rk3562", 1.0}, {"rv1106", 0.5}};
  for (const auto& [soc, tops] : published) {
    EXPECT_NEAR(c.get(soc).peakTops(NpuDType::Int8), tops, 0.1 * tops) << soc;
    EXPECT_LT(c.get(soc).macsPerCycle(NpuDType::Int16), c.get(soc).macsPerCycle(NpuDType::Int8)) << soc;
  }
  EXPECT_EQ(c.get("rk3588").npu.clock_mhz, 1000);
}

TEST(SocProfiles, SourcesMarkPublishedAndAssumedFigures) {
  SocCatalog c = SocCatalog::builtinOnly();
  for (const std::string& name : c.names()) {
    const SocProfile& p = c.get(name);
    SCOPED_TRACE(name);
    for (const char* tuned : {"npu.ddr_bytes_per_cycle", "npu.ddr_efficiency", "npu.task_overhead_cycles",
                              "npu.onchip_buffer_bytes"}) {
      ASSERT_NE(p.source(tuned), nullptr) << tuned;
      // Tuned figures are not published: assumed, or assumed and then fitted (bench/perf_fit.py).
      SourceStatus s = p.source(tuned)->status;
      EXPECT_TRUE(s == SourceStatus::Assumed || s == SourceStatus::Fitted) << tuned;
    }
    EXPECT_EQ(p.source("channel_alignment")->status, SourceStatus::Published);
    EXPECT_EQ(p.source("npu.published_int8_tops")->status, SourceStatus::Published);
    EXPECT_EQ(p.source("npu.int8_macs_per_cycle_per_core")->status, SourceStatus::Derived);
  }
  const SocProfile& rk3588 = c.get("rk3588");
  EXPECT_EQ(rk3588.source("ops.Conv.kernel")->status, SourceStatus::Published);
  EXPECT_FALSE(rk3588.opSupport("Conv")->findLimit("kernel")->assumed);
  EXPECT_TRUE(rk3588.opSupport("MatMul")->findLimit("max_k")->assumed);
  EXPECT_TRUE(c.get("rk3566").opSupport("Conv")->findLimit("kernel")->assumed);
  EXPECT_FALSE(c.get("rv1106").cpu.supports_all_ops);
  EXPECT_TRUE(c.get("rv1106").cpu.supportsOp("Reshape"));
  EXPECT_FALSE(c.get("rv1106").cpu.supportsOp("Erf"));
}

TEST(SocProfiles, WrongTypeNamesFileAndField) {
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["npu"]["cores"] = "three"; }),
            "rk3588.yaml: npu.cores: expected an integer, got 'three'");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["npu"]["ddr_efficiency"] = 1.5; }),
            "rk3588.yaml: npu.ddr_efficiency: expected a fraction in (0, 1], got 1.5");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["channel_alignment"]["int8"]["other"] = "x"; }),
            "rk3588.yaml: channel_alignment.int8.other: expected an integer, got 'x'");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["cpu"]["supported_ops"] = "some"; }),
            "rk3588.yaml: cpu.supported_ops: expected \"all\" or a list of op types, got 'some'");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["ops"]["Conv"]["kernel"] = 31; }),
            "rk3588.yaml: ops.Conv.kernel: expected a range [lo, hi], got '31'");
}

// An op registered CPU-only (OpTraits::cpu_reason) cannot be listed as an NPU op: the decision was
// made once, at the op's registration, for every SoC.
TEST(SocProfiles, CpuOnlyOpCannotBeListed) {
  std::string err =
      errorAfterEdit([](YAML::Node& d) { d["ops"]["TfIdfVectorizer"] = YAML::Node(YAML::NodeType::Map); });
  EXPECT_NE(err.find("ops.TfIdfVectorizer: 'TfIdfVectorizer' runs on the CPU on every SoC (looks n-grams"),
            std::string::npos)
      << err;
}

TEST(SocProfiles, MissingFieldIsNamed) {
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["npu"].remove("clock_mhz"); }),
            "rk3588.yaml: npu: missing field 'clock_mhz'");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d["channel_alignment"].remove("fp16"); }),
            "rk3588.yaml: channel_alignment: missing field 'fp16'");
  EXPECT_EQ(errorAfterEdit([](YAML::Node& d) { d.remove("cpu"); }),
            "rk3588.yaml: (document): missing field 'cpu'");
  std::string msg = errorAfterEdit([](YAML::Node& d) { d["sources"].remove("npu.ddr_efficiency"); });
  EXPECT_NE(msg.find("sources: missing field 'npu.ddr_efficiency'"), std::string::npos) << msg;
}

TEST(SocProfiles, InconsistentOrUnknownContentIsRefused) {
  std::string msg = errorAfterEdit([](YAML::Node& d) { d["npu"]["corse"] = 3; });
  EXPECT_NE(msg.find("rk3588.yaml: npu.corse: unknown field"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["ops"]["Relu"]["kernel"] = YAML::Load("[1, 3]"); });
  EXPECT_NE(msg.find("ops.Relu.kernel: limit 'kernel' does not apply to Relu"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["ops"]["Conv"]["stride"] = YAML::Load("[7, 1]"); });
  EXPECT_NE(msg.find("ops.Conv.stride: range [7, 1] is empty"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["ops"]["Softmax"]["axis"] = YAML::Load("[middle]"); });
  EXPECT_NE(msg.find("ops.Softmax.axis: 'middle' is not one of: channel, last"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["npu"]["int8_macs_per_cycle_per_core"] = 4096; });
  EXPECT_NE(msg.find("npu.int8_macs_per_cycle_per_core: 2 * 4096 MACs/cycle"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["fusion"][0]["activations"].push_back("Mish"); });
  EXPECT_NE(msg.find("fusion[0].activations[8]: 'Mish' is not an op"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["dtypes"].push_back("fp8"); });
  EXPECT_NE(msg.find("dtypes[5]: unknown NPU dtype 'fp8'"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["sources"]["npu.cores"]["status"] = "rumoured"; });
  EXPECT_NE(msg.find("sources.npu.cores.status: expected published, derived, fitted or assumed"),
            std::string::npos)
      << msg;
  EXPECT_EQ(errorAfterEdit([](YAML::Node&) {}), "");  // the round trip itself is accepted
}

TEST(SocProfiles, QuantizedDtypesAreCheckedAgainstTheNpuDtypes) {
  std::string msg = errorAfterEdit([](YAML::Node& d) { d["quantized_dtypes"].push_back("w2a2"); });
  EXPECT_NE(msg.find("quantized_dtypes[1]: 'w2a2' is not one of: w8a8, w8a16"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["quantized_dtypes"] = YAML::Load("[w8a16]"); });
  EXPECT_NE(msg.find("quantized_dtypes: must include w8a8"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) {
    d["quantized_dtypes"] = YAML::Load("[w8a8, w4a16]");
    d["dtypes"] = YAML::Load("[int8, fp16, bf16, tf32]");
    d["channel_alignment"].remove("int16");
  });
  EXPECT_NE(msg.find("'w4a16' has 16-bit activations, but int16 is not in dtypes"), std::string::npos) << msg;
  msg = errorAfterEdit([](YAML::Node& d) { d["quantized_dtypes"] = YAML::Load("[w8a8, int8]"); });
  EXPECT_NE(msg.find("'int8' is not one of"), std::string::npos) << msg;  // aliases only in config()
}

TEST(SocProfiles, AMissingQuantizedDtypeNamesTheSocsThatHaveIt) {
  EXPECT_TRUE(socProfile("rk3576").supportsQuantizedDtype(quant::SchemeDType::W4A16));
  EXPECT_FALSE(socProfile("rk3588").supportsQuantizedDtype(quant::SchemeDType::W4A16));
  EXPECT_NO_THROW(requireQuantizedDtype(socProfile("rv1103"), quant::SchemeDType::W16A16IDfp));
  for (const std::string& soc : socNames())
    EXPECT_NO_THROW(requireQuantizedDtype(socProfile(soc), quant::SchemeDType::W8A8)) << soc;
  try {
    requireQuantizedDtype(socProfile("rk3588"), quant::SchemeDType::W16A16I);
    FAIL() << "rk3588 has no w16a16i";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "quantized_dtype w16a16i is not available on rk3588 (available on: rv1106)");
  }
}

TEST(SocProfiles, YamlSyntaxErrorNamesLine) {
  try {
    parseSocProfile("name: x\nnpu: [1, 2\n", "broken.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.yaml: line"), std::string::npos) << e.what();
  }
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() / ("npuc_soc_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string renamedRk3588(const std::string& name, const std::string& aliases) {
  YAML::Node doc = YAML::Load(builtinText("rk3588.yaml"));
  doc["name"] = name;
  doc["aliases"] = YAML::Load(aliases);
  YAML::Emitter out;
  out << doc;
  return out.c_str();
}

TEST(SocProfiles, UserDirectoryAddsProfiles) {
  TempDir dir;
  dir.write("myboard.yaml", renamedRk3588("myboard", "[myboard_v2]"));
  dir.write("notes.txt", "not a profile");
  SocCatalog c = SocCatalog::load(dir.str());
  EXPECT_EQ(c.get("MYBOARD_V2").name, "myboard");
  EXPECT_TRUE(c.contains("rk3588"));
  EXPECT_EQ(c.names().size(), 6u);
}

TEST(SocProfiles, UserProfileMayNotShadowBuiltin) {
  TempDir dir;
  dir.write("clash.yaml", renamedRk3588("myboard", "[rk3568]"));
  try {
    SocCatalog::load(dir.str());
    FAIL() << "alias clash accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'rk3568' is already defined by rk3566.yaml"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(SocCatalog::load(dir.str() + "/missing"), ConfigError);
}

}  // namespace
}  // namespace npuc
