#include "quant/weight_outliers.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "common/error.h"

namespace npuc::quant {
namespace {

std::vector<float> absoluteValues(const float* w, int64_t n) {
  std::vector<float> a;
  a.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(w[i])) a.push_back(std::fabs(w[i]));
  return a;
}

// Value of rank floor(p * (size - 1)) in ascending order, capped at the second largest so the
// maximum never serves as its own reference. O(n) with nth_element.
float robustAbsRange(std::vector<float>& abs_values, double percentile) {
  if (abs_values.size() < 2) return abs_values.empty() ? 0.0f : abs_values[0];
  const size_t last = abs_values.size() - 1;
  const size_t rank = std::min(static_cast<size_t>(percentile / 100.0 * static_cast<double>(last)), last - 1);
  std::nth_element(abs_values.begin(), abs_values.begin() + static_cast<std::ptrdiff_t>(rank),
                   abs_values.end());
  return abs_values[rank];
}

}  // namespace

WeightOutlierRow measureWeightOutliers(const std::string& tensor, const float* w, int64_t n,
                                       const OutlierOptions& options) {
  if (!(options.percentile > 0.0 && options.percentile < 100.0))
    throw ConfigError("weight outlier check: percentile " + std::to_string(options.percentile) +
                      " must be in (0, 100)");
  std::vector<float> abs_values = absoluteValues(w, n);
  WeightOutlierRow row;
  row.tensor = tensor;
  row.max_abs = abs_values.empty() ? 0.0f : *std::max_element(abs_values.begin(), abs_values.end());
  row.robust_range = robustAbsRange(abs_values, options.percentile);
  if (row.robust_range > 0.0f)
    row.ratio = static_cast<double>(row.max_abs) / row.robust_range;
  else if (row.max_abs > 0.0f)
    row.ratio = std::numeric_limits<double>::infinity();  // a lone non-zero among zeros
  row.flagged = row.ratio > options.ratio_threshold;
  if (row.flagged) row.suggestion = kOutlierSuggestion;
  return row;
}

std::string formatOutlierTable(const std::vector<WeightOutlierRow>& rows) {
  size_t name_width = 6;
  for (const WeightOutlierRow& r : rows) name_width = std::max(name_width, r.tensor.size());
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(name_width)) << "tensor"
     << "  " << std::right << std::setw(12) << "max|w|" << std::setw(12) << "robust" << std::setw(10)
     << "ratio"
     << "\n";
  for (const WeightOutlierRow& r : rows) {
    os << std::left << std::setw(static_cast<int>(name_width)) << r.tensor << "  " << std::right
       << std::setprecision(5) << std::setw(12) << r.max_abs << std::setw(12) << r.robust_range
       << std::setw(10) << std::setprecision(3) << r.ratio;
    if (r.flagged) os << "  <- " << r.suggestion;
    os << "\n";
  }
  return os.str();
}

}  // namespace npuc::quant
