// Helpers shared by the calibration algorithms (calibrate*.cpp); not part of the public API.
#pragma once

#include <memory>

#include "quant/calibrate.h"

namespace npuc::quant {

// Clamps [lo, hi] so that it contains 0 (the quantizer needs it) and never exceeds the observed
// data, and converts it to float.
ClipRange containZeroWithinObserved(const ActivationHistogram& h, double lo, double hi);

// expectedQuantizationMse(h, lo, hi) for many ranges of one histogram: the per-bin tables are
// built once (the kl_divergence guard evaluates up to one range per candidate threshold).
class QuantizationMse {
 public:
  explicit QuantizationMse(const ActivationHistogram& h);  // keeps a reference to h
  ~QuantizationMse();
  double operator()(double lo, double hi) const;

 private:
  struct Tables;
  const ActivationHistogram& h_;
  std::unique_ptr<Tables> tables_;
};

}  // namespace npuc::quant
