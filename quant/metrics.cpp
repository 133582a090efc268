#include "quant/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::quant {
namespace {

// The sums every metric is built from, gathered in one pass.
struct Sums {
  double ref2 = 0.0, test2 = 0.0, dot = 0.0, err2 = 0.0, abs_err = 0.0, max_abs_err = 0.0;
};

Sums accumulate(const float* reference, const float* test, int64_t n) {
  Sums s;
  for (int64_t i = 0; i < n; ++i) {
    const double r = reference[i], t = test[i], e = r - t;
    s.ref2 += r * r;
    s.test2 += t * t;
    s.dot += r * t;
    s.err2 += e * e;
    s.abs_err += std::fabs(e);
    // NaN must not be swallowed by max(): propagate it explicitly.
    s.max_abs_err = std::isnan(e) ? e : std::max(s.max_abs_err, std::fabs(e));
  }
  return s;
}

double cosineFrom(const Sums& s) {
  if (s.ref2 == 0.0 && s.test2 == 0.0) return 1.0;
  if (s.ref2 == 0.0 || s.test2 == 0.0) return 0.0;
  return s.dot / (std::sqrt(s.ref2) * std::sqrt(s.test2));
}

double sqnrFrom(const Sums& s) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (s.err2 == 0.0) return kInf;
  if (s.ref2 == 0.0) return -kInf;
  return 10.0 * std::log10(s.ref2 / s.err2);
}

}  // namespace

double cosineSimilarity(const float* reference, const float* test, int64_t n) {
  return cosineFrom(accumulate(reference, test, n));
}

double euclideanDistance(const float* reference, const float* test, int64_t n) {
  return std::sqrt(accumulate(reference, test, n).err2);
}

double sqnrDb(const float* reference, const float* test, int64_t n) {
  return sqnrFrom(accumulate(reference, test, n));
}

AccuracyMetrics compareOutputs(const float* reference, const float* test, int64_t n) {
  const Sums s = accumulate(reference, test, n);
  AccuracyMetrics m;
  m.cosine = cosineFrom(s);
  m.euclidean = std::sqrt(s.err2);
  m.sqnr_db = sqnrFrom(s);
  m.max_abs_error = s.max_abs_err;
  m.mean_abs_error = n > 0 ? s.abs_err / static_cast<double>(n) : 0.0;
  return m;
}

}  // namespace npuc::quant
