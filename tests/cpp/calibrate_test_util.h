// Shared by the calibration tests: the error a range really costs when data is quantized with it.
#pragma once

#include <vector>

#include "quant/calibrate.h"
#include "quant/qparams.h"

namespace npuc::quant {

// Mean squared error of quantize -> dequantize with the int8 parameters of `range`.
inline double realQuantizationMse(const std::vector<float>& x, ClipRange range) {
  const QuantParams p = chooseActivationParams(range.min, range.max);
  double sum = 0.0;
  for (float v : x) {
    const double d = dequantizeValue(quantizeValue(v, p), p) - static_cast<double>(v);
    sum += d * d;
  }
  return sum / static_cast<double>(x.size());
}

}  // namespace npuc::quant
