// Tensor helpers the differential tests share: seeded random inputs and the largest elementwise
// difference between two results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "ir/tensor.h"

namespace npuc::testutil {

// A float32 tensor of `shape` with values uniform in [lo, hi), the same for the same seed.
inline Tensor randomTensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::Float32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Largest |a - b| over all elements; infinity when the dtypes or shapes differ.
inline double maxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.doubleAt(i) - b.doubleAt(i)));
  return m;
}

}  // namespace npuc::testutil
