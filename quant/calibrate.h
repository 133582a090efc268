// Calibration: choose the clipping range [min, max] an activation is quantized over, from its
// streamed statistics (histogram.h). The range then goes to chooseActivationParams().
//
//   normal         observed min/max: never clips, wastes resolution on outliers.
//   percentile     drops the (100 - p)% tail mass at each end (p = 99.99 by default).
//   kl_divergence  TensorRT-style entropy calibration on |x|: threshold T minimizing
//                  KL(P || Q) between the clipped distribution and its 128-level quantization.
//   mmse           both ends searched to minimize the expected quantization MSE
//                  (rounding noise inside the range + clipping error outside).
//
// Every returned range contains 0. normal/percentile/kl_divergence return ranges within the
// observed [min, max] (widened to 0); mmse returns the exact range of the int8 grid it chose,
// which can reach past an observed end by less than one quantization step.
#pragma once

#include <string>

#include "quant/histogram.h"

namespace npuc::quant {

enum class CalibrationAlgorithm { Normal, Percentile, KlDivergence, Mmse };

// "normal", "percentile", "kl_divergence", "mmse" (the names of RKNN-Toolkit2's
// quantized_algorithm, plus percentile). Throws ConfigError listing the valid names.
CalibrationAlgorithm calibrationAlgorithmFromName(const std::string& name);
const char* calibrationAlgorithmName(CalibrationAlgorithm a);

struct CalibrationOptions {
  CalibrationAlgorithm algorithm = CalibrationAlgorithm::Normal;
  // Percentile kept at each end, in (50, 100].
  double percentile = 99.99;
  // Quantization levels KL compares against: 128 = the levels of one side of int8.
  int kl_levels = 128;
};

struct ClipRange {
  float min = 0.0f;
  float max = 0.0f;
};

// Dispatches on options.algorithm; `tensor` names the activation in error messages. An empty
// histogram (no finite value seen) throws ConfigError: there is nothing to calibrate from.
ClipRange calibrateRange(const ActivationHistogram& h, const CalibrationOptions& options,
                         const std::string& tensor = "activation");

ClipRange minMaxRange(const ActivationHistogram& h);
ClipRange percentileRange(const ActivationHistogram& h, double percentile);
ClipRange klDivergenceRange(const ActivationHistogram& h, int levels);
ClipRange mmseRange(const ActivationHistogram& h);

// Expected squared error per value when the histogram's distribution (values uniform within
// each bin) is quantized with chooseActivationParams(lo, hi): the objective mmseRange
// minimizes, exposed for reports and tests.
double expectedQuantizationMse(const ActivationHistogram& h, double lo, double hi);

}  // namespace npuc::quant
