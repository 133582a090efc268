#include "target/soc_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "opset/op_traits.h"
#include "target/op_constraints.h"

namespace npuc {

// ---------------------------------------------------------------- small vocabularies

const char* npuDTypeName(NpuDType t) {
  switch (t) {
    case NpuDType::Int8: return "int8";
    case NpuDType::Int16: return "int16";
    case NpuDType::Float16: return "fp16";
    case NpuDType::BFloat16: return "bf16";
    case NpuDType::TFloat32: return "tf32";
  }
  return "?";
}

std::optional<NpuDType> npuDTypeFromName(const std::string& name) {
  for (NpuDType t : kAllNpuDTypes)
    if (name == npuDTypeName(t)) return t;
  return std::nullopt;
}

std::optional<NpuDType> npuDTypeOf(DType t) {
  switch (t) {
    case DType::Int8: return NpuDType::Int8;
    case DType::Int16: return NpuDType::Int16;
    case DType::Float16: return NpuDType::Float16;
    default: return std::nullopt;
  }
}

const char* sourceStatusName(SourceStatus s) {
  switch (s) {
    case SourceStatus::Published: return "published";
    case SourceStatus::Derived: return "derived";
    case SourceStatus::Fitted: return "fitted";
    case SourceStatus::Assumed: return "assumed";
  }
  return "?";
}

int64_t ChannelAlignment::operator[](AlignmentRole r) const {
  switch (r) {
    case AlignmentRole::ConvInput: return conv_in;
    case AlignmentRole::ConvOutput: return conv_out;
    case AlignmentRole::Depthwise: return depthwise;
    case AlignmentRole::Other: return other;
  }
  return other;
}

bool CpuModel::supportsOp(const std::string& op_type) const {
  return supports_all_ops ||
         std::find(supported_ops.begin(), supported_ops.end(), op_type) != supported_ops.end();
}

const OpLimit* OpSupport::findLimit(const std::string& limit_name) const {
  for (const OpLimit& l : limits)
    if (l.name == limit_name) return &l;
  return nullptr;
}

// ---------------------------------------------------------------- SocProfile queries

bool SocProfile::supportsDtype(NpuDType t) const {
  return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end();
}

bool SocProfile::supportsQuantizedDtype(quant::SchemeDType t) const {
  return std::find(quantized_dtypes.begin(), quantized_dtypes.end(), t) != quantized_dtypes.end();
}

int64_t SocProfile::alignment(NpuDType t, AlignmentRole role) const {
  auto it = channel_alignment.find(t);
  if (it == channel_alignment.end())
    throw ConfigError(
        fmt::format("SoC {} does not compute in {} (no channel alignment)", name, npuDTypeName(t)));
  return it->second[role];
}

int64_t SocProfile::macsPerCycle(NpuDType t) const {
  if (!supportsDtype(t))
    throw ConfigError(fmt::format("SoC {} does not compute in {}", name, npuDTypeName(t)));
  switch (t) {
    case NpuDType::Int8: return npu.int8_macs_per_cycle_per_core;
    case NpuDType::TFloat32: return npu.tf32_macs_per_cycle_per_core;
    default: return npu.fp16_macs_per_cycle_per_core;
  }
}

double SocProfile::peakTops(NpuDType t) const {
  constexpr double kOpsPerMac = 2;  // a multiply and an add
  return kOpsPerMac * static_cast<double>(macsPerCycle(t)) * static_cast<double>(npu.cores) *
         static_cast<double>(npu.clock_mhz) * 1e6 / 1e12;
}

const OpSupport* SocProfile::opSupport(const std::string& op_type) const {
  for (const OpSupport& o : ops)
    if (o.op_type == op_type) return &o;
  return nullptr;
}

const SourceNote* SocProfile::source(const std::string& field) const {
  for (const SourceNote& s : sources)
    if (s.field == field) return &s;
  return nullptr;
}

// ---------------------------------------------------------------- parsing

namespace {

// How far the MACs/cycle a profile states may put the peak from the published peak before we call
// the profile inconsistent. Published peaks are rounded marketing figures ("6 TOPS", "0.8-1 TOPS").
constexpr double kPeakTolerance = 0.15;

std::string lowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string checkedSocName(const YamlField& f) {
  std::string s = f.asString();
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '_'))
      f.fail("'" + s + "' is not a lower-case SoC name (letters, digits, '_')");
  return s;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

NpuModel parseNpu(const YamlField& f, bool has_tf32) {
  f.requireOnlyKeys({"cores", "clock_mhz", "int8_macs_per_cycle_per_core", "fp16_macs_per_cycle_per_core",
                     "tf32_macs_per_cycle_per_core", "onchip_buffer_bytes", "ddr_bytes_per_cycle",
                     "ddr_efficiency", "task_overhead_cycles", "core_sync_cycles", "published_int8_tops"});
  NpuModel m;
  m.cores = f.at("cores").asPositiveInt();
  m.clock_mhz = f.at("clock_mhz").asPositiveInt();
  m.int8_macs_per_cycle_per_core = f.at("int8_macs_per_cycle_per_core").asPositiveInt();
  m.fp16_macs_per_cycle_per_core = f.at("fp16_macs_per_cycle_per_core").asPositiveInt();
  if (has_tf32) {
    m.tf32_macs_per_cycle_per_core = f.at("tf32_macs_per_cycle_per_core").asPositiveInt();
  } else if (f.has("tf32_macs_per_cycle_per_core")) {
    f.at("tf32_macs_per_cycle_per_core").fail("given, but tf32 is not in dtypes");
  }
  m.onchip_buffer_bytes = f.at("onchip_buffer_bytes").asPositiveInt();
  m.ddr_bytes_per_cycle = f.at("ddr_bytes_per_cycle").asPositiveDouble();
  m.ddr_efficiency = f.at("ddr_efficiency").asFraction();
  m.task_overhead_cycles = f.at("task_overhead_cycles").asNonNegativeInt();
  // Required on a multi-core NPU: the core scheduler charges it per cross-core wait and split.
  if (m.cores > 1) {
    m.core_sync_cycles = f.at("core_sync_cycles").asNonNegativeInt();
  } else if (f.has("core_sync_cycles")) {
    f.at("core_sync_cycles").fail("given, but the NPU has one core");
  }
  if (f.has("published_int8_tops")) m.published_int8_tops = f.at("published_int8_tops").asPositiveDouble();
  return m;
}

std::vector<NpuDType> parseDtypes(const YamlField& f) {
  std::vector<NpuDType> out;
  for (const YamlField& e : f.elements()) {
    std::optional<NpuDType> t = npuDTypeFromName(e.asString());
    if (!t) e.fail("unknown NPU dtype '" + e.asString() + "' (int8, int16, fp16, bf16, tf32)");
    if (std::find(out.begin(), out.end(), *t) != out.end()) e.fail("dtype listed twice");
    out.push_back(*t);
  }
  if (std::find(out.begin(), out.end(), NpuDType::Int8) == out.end()) f.fail("an NPU profile must list int8");
  return out;
}

std::map<NpuDType, ChannelAlignment> parseAlignment(const YamlField& f, const std::vector<NpuDType>& dtypes) {
  std::vector<std::string> names;
  for (NpuDType t : dtypes) names.push_back(npuDTypeName(t));
  f.requireOnlyKeys(names);
  std::map<NpuDType, ChannelAlignment> out;
  for (NpuDType t : dtypes) {
    YamlField row = f.at(npuDTypeName(t));
    row.requireOnlyKeys({"conv_in", "conv_out", "depthwise", "other"});
    out[t] = ChannelAlignment{row.at("conv_in").asPositiveInt(), row.at("conv_out").asPositiveInt(),
                              row.at("depthwise").asPositiveInt(), row.at("other").asPositiveInt()};
  }
  return out;
}

LimitValue parseLimitValue(const LimitCheck& check, const YamlField& f) {
  switch (check.kind) {
    case LimitKind::Int: return f.asPositiveInt();
    case LimitKind::Range: return f.asRange();
    case LimitKind::Names: {
      std::vector<std::string> names = f.asStringList();
      for (const std::string& n : names)
        if (std::find(check.allowed_names.begin(), check.allowed_names.end(), n) == check.allowed_names.end())
          f.fail("'" + n + "' is not one of: " + joined(check.allowed_names));
      if (names.empty()) f.fail("expected at least one of: " + joined(check.allowed_names));
      return names;
    }
    case LimitKind::None: break;
  }
  f.fail("limit '" + check.name + "' takes no value");
}

// Applies `assumed: true` (every limit of the op) or `assumed: [name, ...]`.
void parseAssumedMarks(const YamlField& f, OpSupport& op) {
  if (f.isScalar()) {
    bool all = f.asBool();
    for (OpLimit& l : op.limits) l.assumed = all;
    return;
  }
  for (const YamlField& e : f.elements()) {
    std::string n = e.asString();
    auto it = std::find_if(op.limits.begin(), op.limits.end(), [&](const OpLimit& l) { return l.name == n; });
    if (it == op.limits.end()) e.fail("'" + n + "' is not a limit of " + op.op_type);
    it->assumed = true;
  }
}

OpSupport parseOpSupport(const std::string& op_type, const YamlField& f) {
  OpSupport op;
  op.op_type = op_type;
  // An op registered as CPU-only (opset registration, OpTraits::cpu_reason) has its NPU decision
  // made for every SoC; a profile listing it would contradict that decision.
  const std::string& cpu_reason = opTraitsOfType(op_type).cpu_reason;
  if (!cpu_reason.empty()) f.fail("'" + op_type + "' runs on the CPU on every SoC (" + cpu_reason + ")");
  if (f.node().IsNull()) return op;  // "Relu:" with nothing after it: no limits
  for (const std::string& key : f.keys()) {
    if (key == "assumed") continue;
    YamlField value = f.at(key);
    const LimitCheck* check = findLimitCheck(key);
    if (!check) {
      std::vector<std::string> known;
      for (const LimitCheck& c : limitChecks()) known.push_back(c.name);
      value.fail("unknown op limit (known: " + joined(known) + ", assumed)");
    }
    if (!check->appliesTo(op_type))
      value.fail(fmt::format("limit '{}' does not apply to {} (it applies to {})", key, op_type,
                             joined(check->ops)));
    op.limits.push_back(OpLimit{key, parseLimitValue(*check, value), false});
  }
  if (f.has("assumed")) parseAssumedMarks(f.at("assumed"), op);
  return op;
}

std::vector<OpSupport> parseOps(const YamlField& f) {
  std::vector<OpSupport> out;
  for (const std::string& op_type : f.keys()) out.push_back(parseOpSupport(op_type, f.at(op_type)));
  if (out.empty()) f.fail("the NPU must support at least one op");
  return out;
}

std::vector<FusionRule> parseFusion(const YamlField& f, const std::vector<OpSupport>& ops) {
  auto requireNpuOp = [&](const YamlField& e) {
    std::string op = e.asString();
    bool known = std::any_of(ops.begin(), ops.end(), [&](const OpSupport& o) { return o.op_type == op; });
    if (!known) e.fail("'" + op + "' is not an op the profile's NPU supports (see ops)");
    return op;
  };
  std::vector<FusionRule> out;
  for (const YamlField& r : f.elements()) {
    r.requireOnlyKeys({"anchors", "activations", "residual_add", "assumed"});
    FusionRule rule;
    for (const YamlField& e : r.at("anchors").elements()) rule.anchors.push_back(requireNpuOp(e));
    if (rule.anchors.empty()) r.at("anchors").fail("expected at least one anchor op");
    for (const YamlField& e : r.at("activations").elements()) rule.activations.push_back(requireNpuOp(e));
    rule.residual_add = r.at("residual_add").asBool();
    if (rule.residual_add &&
        !std::any_of(ops.begin(), ops.end(), [](const OpSupport& o) { return o.op_type == "Add"; }))
      r.at("residual_add").fail("needs Add among the NPU ops");
    rule.assumed = r.has("assumed") && r.at("assumed").asBool();
    out.push_back(std::move(rule));
  }
  return out;
}

CpuModel parseCpu(const YamlField& f) {
  f.requireOnlyKeys({"cores", "clock_mhz", "fp32_gflops", "mem_bandwidth_gbps", "supported_ops"});
  CpuModel m;
  m.cores = f.at("cores").asPositiveInt();
  m.clock_mhz = f.at("clock_mhz").asPositiveInt();
  m.fp32_gflops = f.at("fp32_gflops").asPositiveDouble();
  m.mem_bandwidth_gbps = f.at("mem_bandwidth_gbps").asPositiveDouble();
  YamlField ops = f.at("supported_ops");
  if (ops.isScalar()) {
    if (ops.asString() != "all")
      ops.fail("expected \"all\" or a list of op types, got '" + ops.asString() + "'");
    m.supports_all_ops = true;
  } else {
    m.supported_ops = ops.asStringList();
  }
  return m;
}

// quantized_dtypes: RKNN names, w8a8 required, and the NPU dtype each one computes in listed in
// `dtypes` (16-bit activations need int16).
std::vector<quant::SchemeDType> parseQuantizedDtypes(const YamlField& f,
                                                     const std::vector<NpuDType>& dtypes) {
  std::vector<quant::SchemeDType> out;
  for (const YamlField& e : f.elements()) {
    const std::string name = e.asString();
    const std::optional<quant::SchemeDType> t = quant::schemeDTypeFromName(name);
    if (!t || name != quant::schemeDTypeName(*t))
      e.fail("'" + name + "' is not one of: w8a8, w8a16, w16a16i, w16a16i_dfp, w4a16");
    if (std::find(out.begin(), out.end(), *t) != out.end()) e.fail("'" + name + "' is listed twice");
    const bool needs_int16 =
        quant::QuantScheme::of(*t, *t == quant::SchemeDType::W4A16 ? 128 : 0).activation_bits == 16;
    if (needs_int16 && std::find(dtypes.begin(), dtypes.end(), NpuDType::Int16) == dtypes.end())
      e.fail("'" + name + "' has 16-bit activations, but int16 is not in dtypes");
    out.push_back(*t);
  }
  if (std::find(out.begin(), out.end(), quant::SchemeDType::W8A8) == out.end()) f.fail("must include w8a8");
  return out;
}

// Every figure a later stage computes with must say where it comes from.
std::vector<std::string> requiredSourceFields(const SocProfile& p) {
  std::vector<std::string> out = {"npu.cores",
                                  "npu.clock_mhz",
                                  "npu.int8_macs_per_cycle_per_core",
                                  "npu.fp16_macs_per_cycle_per_core",
                                  "npu.onchip_buffer_bytes",
                                  "npu.ddr_bytes_per_cycle",
                                  "npu.ddr_efficiency",
                                  "npu.task_overhead_cycles",
                                  "dtypes",
                                  "quantized_dtypes",
                                  "channel_alignment",
                                  "ops",
                                  "fusion",
                                  "cpu.cores",
                                  "cpu.clock_mhz",
                                  "cpu.fp32_gflops",
                                  "cpu.mem_bandwidth_gbps",
                                  "cpu.supported_ops"};
  if (p.npu.tf32_macs_per_cycle_per_core > 0) out.push_back("npu.tf32_macs_per_cycle_per_core");
  if (p.npu.published_int8_tops) out.push_back("npu.published_int8_tops");
  if (p.npu.cores > 1) out.push_back("npu.core_sync_cycles");
  return out;
}

// Fields a sources entry may refer to beyond the required ones (finer-grained notes).
std::set<std::string> optionalSourceFields(const SocProfile& p) {
  std::set<std::string> out;
  for (NpuDType t : p.dtypes) out.insert(std::string("channel_alignment.") + npuDTypeName(t));
  for (const OpSupport& o : p.ops) {
    out.insert("ops." + o.op_type);
    for (const OpLimit& l : o.limits) out.insert("ops." + o.op_type + "." + l.name);
  }
  return out;
}

std::vector<SourceNote> parseSources(const YamlField& f, const SocProfile& p) {
  std::vector<std::string> required = requiredSourceFields(p);
  std::set<std::string> optional = optionalSourceFields(p);
  std::vector<SourceNote> out;
  for (const std::string& field : f.keys()) {
    YamlField entry = f.at(field);
    bool known =
        std::find(required.begin(), required.end(), field) != required.end() || optional.count(field);
    if (!known) entry.fail("names no field of this profile");
    entry.requireOnlyKeys({"status", "note"});
    std::string status = entry.at("status").asString();
    SourceNote n{field, SourceStatus::Assumed, entry.at("note").asString()};
    if (status == "published") {
      n.status = SourceStatus::Published;
    } else if (status == "derived") {
      n.status = SourceStatus::Derived;
    } else if (status == "fitted") {
      n.status = SourceStatus::Fitted;
    } else if (status != "assumed") {
      entry.at("status").fail("expected published, derived, fitted or assumed, got '" + status + "'");
    }
    out.push_back(std::move(n));
  }
  for (const std::string& field : required) {
    bool covered = std::any_of(out.begin(), out.end(), [&](const SourceNote& n) { return n.field == field; });
    if (!covered)
      f.fail("missing field '" + field + "' (every figure must say whether it is published or assumed)");
  }
  return out;
}

void checkPeakAgainstPublished(const SocProfile& p, const YamlField& npu) {
  if (!p.npu.published_int8_tops) return;
  double published = *p.npu.published_int8_tops;
  double peak = p.peakTops(NpuDType::Int8);
  if (std::abs(peak - published) > kPeakTolerance * published) {
    // {:g}: the doubles as a default std::ostream printed them (6 significant digits).
    npu.at("int8_macs_per_cycle_per_core")
        .fail(fmt::format(
            "2 * {} MACs/cycle * {} cores * {} MHz = {:g} TOPS, more than {:g}% off published_int8_tops {:g}",
            p.npu.int8_macs_per_cycle_per_core, p.npu.cores, p.npu.clock_mhz, peak, kPeakTolerance * 100,
            published));
  }
}

}  // namespace

SocProfile parseSocProfile(const std::string& yaml_text, const std::string& file) {
  YamlField doc = parseYamlDocument(yaml_text, file);
  if (!doc.isMap()) doc.fail("expected a map of profile fields");
  doc.requireOnlyKeys({"name", "aliases", "description", "npu", "dtypes", "quantized_dtypes",
                       "channel_alignment", "ops", "fusion", "cpu", "sources"});
  SocProfile p;
  p.file = file;
  p.name = checkedSocName(doc.at("name"));
  if (doc.has("aliases"))
    for (const YamlField& a : doc.at("aliases").elements()) p.aliases.push_back(checkedSocName(a));
  if (doc.has("description")) p.description = doc.at("description").asString();
  p.dtypes = parseDtypes(doc.at("dtypes"));
  p.quantized_dtypes = parseQuantizedDtypes(doc.at("quantized_dtypes"), p.dtypes);
  p.npu = parseNpu(doc.at("npu"), p.supportsDtype(NpuDType::TFloat32));
  p.channel_alignment = parseAlignment(doc.at("channel_alignment"), p.dtypes);
  p.ops = parseOps(doc.at("ops"));
  p.fusion = parseFusion(doc.at("fusion"), p.ops);
  p.cpu = parseCpu(doc.at("cpu"));
  p.sources = parseSources(doc.at("sources"), p);
  checkPeakAgainstPublished(p, doc.at("npu"));
  return p;
}

SocProfile loadSocProfileFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read SoC profile");
  std::ostringstream text;
  text << in.rdbuf();
  return parseSocProfile(text.str(), path);
}

// ---------------------------------------------------------------- catalogue

void SocCatalog::add(SocProfile p) {
  std::vector<std::string> keys = {p.name};
  keys.insert(keys.end(), p.aliases.begin(), p.aliases.end());
  for (const std::string& k : keys) {
    auto it = index_.find(k);
    if (it != index_.end())
      throw ConfigError(
          fmt::format("{}: SoC name '{}' is already defined by {}", p.file, k, profiles_[it->second].file));
  }
  for (const std::string& k : keys) index_[k] = profiles_.size();
  profiles_.push_back(std::move(p));
}

SocCatalog SocCatalog::load(const std::optional<std::string>& user_dir) {
  SocCatalog c;
  for (size_t i = 0; i < kEmbeddedSocProfiles_count; ++i)
    if (kEmbeddedSocProfiles[i].name)
      c.add(parseSocProfile(kEmbeddedSocProfiles[i].text, kEmbeddedSocProfiles[i].name));
  if (!user_dir) return c;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(*user_dir, ec)) throw ConfigError("NPUC_SOC_DIR=" + *user_dir + ": not a directory");
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(*user_dir))
    if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());  // deterministic clash reports
  for (const std::string& f : files) c.add(loadSocProfileFile(f));
  return c;
}

bool SocCatalog::contains(const std::string& name) const {
  return index_.count(lowerCase(name)) != 0;
}

const SocProfile& SocCatalog::get(const std::string& name) const {
  auto it = index_.find(lowerCase(name));
  if (it == index_.end()) {
    std::vector<std::string> valid;
    for (const auto& kv : index_) valid.push_back(kv.first);
    throw ConfigError(fmt::format("unknown target platform '{}' (valid: {})", name, joined(valid)));
  }
  return profiles_[it->second];
}

std::vector<std::string> SocCatalog::names() const {
  std::vector<std::string> out;
  for (const SocProfile& p : profiles_) out.push_back(p.name);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

const SocCatalog& processCatalog() {
  static const SocCatalog catalog = [] {
    const char* dir = std::getenv("NPUC_SOC_DIR");
    return SocCatalog::load(dir && *dir ? std::optional<std::string>(dir) : std::nullopt);
  }();
  return catalog;
}

}  // namespace

const SocProfile& socProfile(const std::string& name) {
  return processCatalog().get(name);
}
std::vector<std::string> socNames() {
  return processCatalog().names();
}

void requireQuantizedDtype(const SocProfile& soc, quant::SchemeDType dtype) {
  if (soc.supportsQuantizedDtype(dtype)) return;
  std::vector<std::string> having;
  for (const std::string& name : socNames())
    if (socProfile(name).supportsQuantizedDtype(dtype)) having.push_back(name);
  throw ConfigError(fmt::format("quantized_dtype {} is not available on {} (available on: {})",
                                quant::schemeDTypeName(dtype), soc.name,
                                having.empty() ? std::string("no built-in SoC") : joined(having)));
}

}  // namespace npuc
