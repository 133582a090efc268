#include "quant/calibrate.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "quant/calibrate_detail.h"

namespace npuc::quant {
namespace {

// Value below which `fraction` of the mass lies, interpolating linearly inside the bin (values
// are taken as uniform within a bin), clamped to the exact observed extremes.
double quantile(const ActivationHistogram& h, double fraction) {
  const double target = fraction * static_cast<double>(h.count());
  double cumulative = 0.0;
  for (int i = 0; i < kHistogramBins; ++i) {
    const double c = static_cast<double>(h.counts()[i]);
    if (c > 0 && cumulative + c >= target) {
      const double v = h.binLow(i) + (target - cumulative) / c * h.binWidth();
      return std::clamp(v, static_cast<double>(h.min()), static_cast<double>(h.max()));
    }
    cumulative += c;
  }
  return h.max();
}

}  // namespace

ClipRange containZeroWithinObserved(const ActivationHistogram& h, double lo, double hi) {
  const double observed_lo = std::min(0.0f, h.min());
  const double observed_hi = std::max(0.0f, h.max());
  lo = std::clamp(std::min(lo, 0.0), observed_lo, 0.0);
  hi = std::clamp(std::max(hi, 0.0), 0.0, observed_hi);
  return ClipRange{static_cast<float>(lo), static_cast<float>(hi)};
}

CalibrationAlgorithm calibrationAlgorithmFromName(const std::string& name) {
  if (name == "normal") return CalibrationAlgorithm::Normal;
  if (name == "percentile") return CalibrationAlgorithm::Percentile;
  if (name == "kl_divergence") return CalibrationAlgorithm::KlDivergence;
  if (name == "mmse") return CalibrationAlgorithm::Mmse;
  throw ConfigError("unknown quantized_algorithm '" + name +
                    "' (expected one of: normal, percentile, kl_divergence, mmse)");
}

const char* calibrationAlgorithmName(CalibrationAlgorithm a) {
  switch (a) {
    case CalibrationAlgorithm::Normal: return "normal";
    case CalibrationAlgorithm::Percentile: return "percentile";
    case CalibrationAlgorithm::KlDivergence: return "kl_divergence";
    case CalibrationAlgorithm::Mmse: return "mmse";
  }
  return "?";
}

ClipRange minMaxRange(const ActivationHistogram& h) {
  return containZeroWithinObserved(h, h.min(), h.max());
}

ClipRange percentileRange(const ActivationHistogram& h, double percentile) {
  if (!(percentile > 50.0 && percentile <= 100.0)) {
    std::ostringstream msg;
    msg << "percentile calibration: percentile " << percentile << " must be in (50, 100]";
    throw ConfigError(msg.str());
  }
  const double tail = 1.0 - percentile / 100.0;
  return containZeroWithinObserved(h, quantile(h, tail), quantile(h, 1.0 - tail));
}

ClipRange calibrateRange(const ActivationHistogram& h, const CalibrationOptions& options,
                         const std::string& tensor) {
  if (h.empty())
    throw ConfigError("calibration of '" + tensor + "': no finite value was observed (" +
                      std::to_string(h.nonFiniteCount()) + " NaN/inf values)");
  switch (options.algorithm) {
    case CalibrationAlgorithm::Normal: return minMaxRange(h);
    case CalibrationAlgorithm::Percentile: return percentileRange(h, options.percentile);
    case CalibrationAlgorithm::KlDivergence: return klDivergenceRange(h, options.kl_levels);
    case CalibrationAlgorithm::Mmse: return mmseRange(h);
  }
  throw ConfigError("calibration of '" + tensor + "': unknown algorithm");
}

}  // namespace npuc::quant
