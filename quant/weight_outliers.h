// Weight outlier detection. A per-tensor ("layer") int8 scale is set by max|w|; when a few
// weights sit far beyond the rest, every other weight is quantized with a fraction of the 255
// levels (log2(ratio) bits are lost for 99.9% of the tensor). This flags such tensors before
// the user wonders why accuracy dropped.
//
//   robust range = the 99.9th percentile of |w| (configurable), taken as the value of rank
//                  floor(p * (n - 1)) but never the largest element itself, so a single outlier
//                  cannot define its own reference on a small tensor;
//   ratio        = max|w| / robust range;  flagged when ratio > kDefaultOutlierRatio.
//
// Why 4: a Gaussian weight of a million elements has ratio ~1.5 (max ~4.9 sigma vs 3.3 sigma
// at 99.9%), a Laplace one ~2.0 (13.8 b vs 6.9 b); a ratio above 4 costs more than 2 bits of resolution to
// the bulk of the tensor under per-tensor quantization, which is where accuracy visibly drops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::quant {

constexpr double kDefaultOutlierPercentile = 99.9;
constexpr double kDefaultOutlierRatio = 4.0;
constexpr const char* kOutlierSuggestion =
    "consider quantized_algorithm='mmse' or 'kl_divergence', or hybrid quantization for this layer";

struct OutlierOptions {
  double percentile = kDefaultOutlierPercentile;  // in (0, 100)
  double ratio_threshold = kDefaultOutlierRatio;
};

struct WeightOutlierRow {
  std::string tensor;
  float max_abs = 0.0f;
  float robust_range = 0.0f;
  double ratio = 1.0;  // 1 when the robust range is 0 and max is 0 (all-zero tensor)
  bool flagged = false;
  std::string suggestion;  // kOutlierSuggestion when flagged, empty otherwise
};

// Measures one weight tensor. Throws ConfigError on an invalid percentile.
WeightOutlierRow measureWeightOutliers(const std::string& tensor, const float* w, int64_t n,
                                       const OutlierOptions& options = {});

// The table a report prints: one line per row, columns tensor / max|w| / robust / ratio, then
// the suggestion for flagged rows.
std::string formatOutlierTable(const std::vector<WeightOutlierRow>& rows);

}  // namespace npuc::quant
