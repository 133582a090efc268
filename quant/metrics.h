// Per-layer accuracy metrics comparing a quantized (or FP16) output with the FP32 reference, as
// the accuracy report prints them. All accumulate in double; NaN in either input propagates.
#pragma once

#include <cstdint>

namespace npuc::quant {

// cos(angle) between the two tensors as vectors. 1 when both are all-zero (identical), 0 when
// exactly one is. Insensitive to a global scale: catches wrong structure, not wrong magnitude.
double cosineSimilarity(const float* reference, const float* test, int64_t n);
// ||reference - test||_2. Absolute: grows with tensor size and magnitude.
double euclideanDistance(const float* reference, const float* test, int64_t n);
// Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (ref - test)^2).
// +inf when the outputs are identical; -inf when the reference is all-zero and test is not.
double sqnrDb(const float* reference, const float* test, int64_t n);

struct AccuracyMetrics {
  double cosine = 1.0;
  double euclidean = 0.0;
  double sqnr_db = 0.0;
  double max_abs_error = 0.0;
  double mean_abs_error = 0.0;
};

AccuracyMetrics compareOutputs(const float* reference, const float* test, int64_t n);

}  // namespace npuc::quant
