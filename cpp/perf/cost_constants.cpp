#include "perf/cost_constants.h"

#include <sstream>

#include "common/error.h"

namespace npuc::perf {

namespace {

struct Field {
  const char* name;
  double CostConstants::*member;
};

constexpr Field kFields[] = {
    {"move_cycles_per_vector", &CostConstants::move_cycles_per_vector},
    {"transpose_factor", &CostConstants::transpose_factor},
    {"lut_cycles_per_vector", &CostConstants::lut_cycles_per_vector},
    {"normalize_passes", &CostConstants::normalize_passes},
    {"deep_cin_efficiency", &CostConstants::deep_cin_efficiency},
    {"pack_small_cin", &CostConstants::pack_small_cin},
};

}  // namespace

// Fitted values: bench/perf_fit.py on rknn_model_zoo's 16-row FPS table (docs/perf_model.md).
CostConstants::CostConstants()
    : move_cycles_per_vector(13.5),  // fitted, tied to lut_cycles_per_vector (one low-efficiency class)
      transpose_factor(4.0),         // assumed
      lut_cycles_per_vector(13.5),   // fitted, tied to move_cycles_per_vector
      normalize_passes(3.0),         // assumed
      deep_cin_efficiency(0.39),     // fitted
      pack_small_cin(1.0) {}         // assumed

void CostConstants::set(const std::string& name, double value) {
  for (const Field& f : kFields) {
    if (name != f.name) continue;
    bool is_flag = name == "pack_small_cin";
    bool is_fraction = name == "deep_cin_efficiency";
    bool ok = is_flag ? (value == 0.0 || value == 1.0) : value > 0.0 && (!is_fraction || value <= 1.0);
    if (!ok)
      throw ConfigError("cost constant '" + name + "': " + std::to_string(value) +
                        (is_flag       ? " is not 0 or 1"
                         : is_fraction ? " is not in (0, 1]"
                                       : " is not positive"));
    this->*f.member = value;
    return;
  }
  std::string known;
  for (const Field& f : kFields) known += (known.empty() ? "" : ", ") + std::string(f.name);
  throw ConfigError("unknown cost constant '" + name + "' (known: " + known + ")");
}

std::string CostConstants::signature() const {
  std::ostringstream s;
  for (const Field& f : kFields) s << f.name << '=' << this->*f.member << ',';
  return s.str();
}

}  // namespace npuc::perf
