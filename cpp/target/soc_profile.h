// SoC profiles: what an NPU SoC offers, read from data (opset/soc/<soc>.yaml, embedded into the
// library at build time, plus any *.yaml in the folder named by NPUC_SOC_DIR). The format and the
// meaning of every field are described in docs/soc_profiles.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "quant/quant_scheme.h"
#include "target/yaml_fields.h"

namespace npuc {

// The profile YAML files compiled into the library (cmake/embed_files.cmake).
struct EmbeddedFile {
  const char* name;
  const char* text;
};
extern const EmbeddedFile kEmbeddedSocProfiles[];
extern const size_t kEmbeddedSocProfiles_count;

// Element types an NPU computes in. bf16 and tf32 have no IR DType: they are NPU-only formats.
enum class NpuDType { Int8, Int16, Float16, BFloat16, TFloat32 };
constexpr NpuDType kAllNpuDTypes[] = {NpuDType::Int8, NpuDType::Int16, NpuDType::Float16, NpuDType::BFloat16,
                                      NpuDType::TFloat32};
const char* npuDTypeName(NpuDType t);  // "int8", "int16", "fp16", "bf16", "tf32"
std::optional<NpuDType> npuDTypeFromName(const std::string& name);
// The NPU dtype an IR tensor of `t` computes in, if there is one (int8, int16, float16).
std::optional<NpuDType> npuDTypeOf(DType t);

// Which channel of which op an alignment applies to (the columns of the published RKNN table).
enum class AlignmentRole { ConvInput, ConvOutput, Depthwise, Other };

struct ChannelAlignment {
  int64_t conv_in = 0;
  int64_t conv_out = 0;
  int64_t depthwise = 0;
  int64_t other = 0;
  int64_t operator[](AlignmentRole r) const;
  bool operator==(const ChannelAlignment& o) const {
    return conv_in == o.conv_in && conv_out == o.conv_out && depthwise == o.depthwise && other == o.other;
  }
};

struct NpuModel {
  int64_t cores = 0;
  int64_t clock_mhz = 0;
  int64_t int8_macs_per_cycle_per_core = 0;
  // The 16-bit MAC rate: int16, fp16 and bf16 share it.
  int64_t fp16_macs_per_cycle_per_core = 0;
  int64_t tf32_macs_per_cycle_per_core = 0;   // 0 unless the profile lists tf32
  int64_t onchip_buffer_bytes = 0;            // per core
  double ddr_bytes_per_cycle = 0;             // per NPU cycle, whole NPU
  double ddr_efficiency = 0;                  // sustained fraction of ddr_bytes_per_cycle
  int64_t task_overhead_cycles = 0;           // fixed cost of one NPU task
  // Multi-core: cycles one core spends when it waits for another (a cross-core dependency, or the
  // barrier closing a task split over cores). 0 on single-core NPUs.
  int64_t core_sync_cycles = 0;
  std::optional<double> published_int8_tops;  // whole-SoC peak as marketed, if given
};

// The CPU that runs fallback ops.
struct CpuModel {
  int64_t cores = 0;
  int64_t clock_mhz = 0;
  double fp32_gflops = 0;
  double mem_bandwidth_gbps = 0;
  bool supports_all_ops = false;
  std::vector<std::string> supported_ops;  // when !supports_all_ops
  bool supportsOp(const std::string& op_type) const;
};

// The value of one op limit as the profile writes it.
using LimitValue = std::variant<int64_t, IntRange, std::vector<std::string>>;

struct OpLimit {
  std::string name;  // a LimitCheck name (op_constraints.h)
  LimitValue value;
  bool assumed = false;  // not published; a stated assumption
};

struct OpSupport {
  std::string op_type;
  std::vector<OpLimit> limits;
  const OpLimit* findLimit(const std::string& name) const;
};

// An anchor op (Conv) followed by at most one listed activation and then, if residual_add, an Add
// of another tensor runs as one NPU task.
struct FusionRule {
  std::vector<std::string> anchors;
  std::vector<std::string> activations;
  bool residual_add = false;
  bool assumed = false;
};

// Fitted: an assumed figure whose value was then fitted to published end-to-end measurements
// (bench/perf_fit.py); the figure itself is still not published.
enum class SourceStatus { Published, Derived, Fitted, Assumed };
const char* sourceStatusName(SourceStatus s);

// Where one figure of the profile comes from.
struct SourceNote {
  std::string field;  // dotted path: "npu.cores", "channel_alignment", "ops.Conv.kernel", ...
  SourceStatus status = SourceStatus::Assumed;
  std::string note;
};

struct SocProfile {
  std::string name;  // lower case: "rk3588"
  std::vector<std::string> aliases;
  std::string file;  // where it was read from ("rk3588.yaml", or a user path)
  std::string description;
  NpuModel npu;
  std::vector<NpuDType> dtypes;
  // RKNN's quantized_dtype values this SoC builds (w8a8 always; the others per SoC).
  std::vector<quant::SchemeDType> quantized_dtypes;
  std::map<NpuDType, ChannelAlignment> channel_alignment;
  std::vector<OpSupport> ops;  // in profile order
  std::vector<FusionRule> fusion;
  CpuModel cpu;
  std::vector<SourceNote> sources;

  bool supportsDtype(NpuDType t) const;
  bool supportsQuantizedDtype(quant::SchemeDType t) const;
  // Channel multiple the NPU pads `role`'s channels to; ConfigError if the dtype is unsupported.
  int64_t alignment(NpuDType t, AlignmentRole role) const;
  // MACs per cycle of one core for dtype `t`; ConfigError if unsupported.
  int64_t macsPerCycle(NpuDType t) const;
  // Whole-NPU peak in tera-operations per second: 2 ops per MAC * MACs/cycle * cores * clock.
  double peakTops(NpuDType t) const;
  const OpSupport* opSupport(const std::string& op_type) const;
  const SourceNote* source(const std::string& field) const;
};

// Parses and validates one profile. `file` names it in error messages. Every missing field, wrong
// type, unknown key, unknown op limit and figure without a `sources` entry is a ConfigError naming
// the file and the field path.
SocProfile parseSocProfile(const std::string& yaml_text, const std::string& file);
// Reads and parses a profile file (ConfigError if unreadable).
SocProfile loadSocProfileFile(const std::string& path);

// A set of profiles addressable by name or alias (case-insensitive).
class SocCatalog {
 public:
  // The built-in profiles plus every *.yaml in `user_dir` (if given). A user profile whose name or
  // alias clashes with another profile is refused.
  static SocCatalog load(const std::optional<std::string>& user_dir);
  static SocCatalog builtinOnly() { return load(std::nullopt); }

  // ConfigError listing the valid names when `name` is unknown.
  const SocProfile& get(const std::string& name) const;
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;  // canonical names, sorted

 private:
  void add(SocProfile p);
  std::vector<SocProfile> profiles_;
  std::map<std::string, size_t> index_;  // lower-case name or alias -> profiles_ index
};

// The process-wide catalogue: built-in profiles plus NPUC_SOC_DIR (read once, on first use).
const SocProfile& socProfile(const std::string& name);
std::vector<std::string> socNames();

// ConfigError when `soc` cannot build `dtype`, naming the SoCs of the process-wide catalogue that can:
// "quantized_dtype w4a16 is not available on rk3588 (available on: rk3576)".
void requireQuantizedDtype(const SocProfile& soc, quant::SchemeDType dtype);

}  // namespace npuc
