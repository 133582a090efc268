#include "quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace npuc::quant {
namespace {

// floor(a / 2^k) for any sign of a (integer division truncates toward zero, which is wrong for
// negative bins). k is capped: window indices are tiny, so beyond 62 the result is 0 or -1.
int64_t floorDivPow2(int64_t a, int k) {
  k = std::min(k, 62);
  return a >= 0 ? (a >> k) : -((-a + (int64_t{1} << k) - 1) >> k);
}

// Exact extremes and count of the finite values of one sample.
struct FiniteRange {
  float min = INFINITY;
  float max = -INFINITY;
  uint64_t finite = 0;
};

// Finite iff the exponent bits are not all ones.
inline bool finiteBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x7f800000u) != 0x7f800000u;
}

// The result of folding std::min / std::max over the finite values in order, computed with
// lane-wise reductions (AVX2 when compiled for it; GCC does not vectorize float min/max without
// -ffast-math). The two agree on the value; they can only differ in the sign of a zero extreme
// (min(0.0f, -0.0f) keeps the first), so a zero extreme takes the sign of the first zero of the
// sample, as the in-order fold does.
FiniteRange finiteRangeOf(const float* values, int64_t n) {
  float lo = INFINITY, hi = -INFINITY;
  int64_t finite = 0;
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  __m256 vlo = _mm256_set1_ps(INFINITY), vhi = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(values + i);
    const __m256i bits = _mm256_and_si256(_mm256_castps_si256(v), exponent);
    const __m256 bad = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, exponent));  // NaN or inf
    vlo = _mm256_min_ps(vlo, _mm256_blendv_ps(v, _mm256_set1_ps(INFINITY), bad));
    vhi = _mm256_max_ps(vhi, _mm256_blendv_ps(v, _mm256_set1_ps(-INFINITY), bad));
    finite += 8 - __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(bad)));
  }
  alignas(32) float lanes_lo[8], lanes_hi[8];
  _mm256_store_ps(lanes_lo, vlo);
  _mm256_store_ps(lanes_hi, vhi);
  for (int k = 0; k < 8; ++k) {
    lo = std::min(lo, lanes_lo[k]);
    hi = std::max(hi, lanes_hi[k]);
  }
#endif
  for (; i < n; ++i) {
    const float v = values[i];
    if (!finiteBits(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++finite;
  }
  FiniteRange r{lo, hi, static_cast<uint64_t>(finite)};
  if (r.min == 0.0f || r.max == 0.0f) {
    for (i = 0; i < n; ++i) {
      if (values[i] != 0.0f) continue;
      if (r.min == 0.0f) r.min = values[i];
      if (r.max == 0.0f) r.max = values[i];
      break;
    }
  }
  return r;
}

// Window bin of each of `n` finite values: floor(v * inv_width) - first_bin, clamped to the
// window, and the count of values exactly 0. All in double, where every step is exact
// (v * 2^-e is a power-of-two scaling, |floor| and first_bin stay below 2^13), so it equals the
// int64 formula of absoluteBinOf, four values at a time with AVX2.
uint64_t binIndices(const float* values, int n, double inv_width, double first_bin, int32_t* out) {
  constexpr double kLast = kHistogramBins - 1;
  uint64_t zeros = 0;
  int i = 0;
#if defined(__AVX2__)
  const __m256d scale = _mm256_set1_pd(inv_width), first = _mm256_set1_pd(first_bin);
  const __m256d zero = _mm256_setzero_pd(), last = _mm256_set1_pd(kLast);
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(values + i);
    zeros += static_cast<uint64_t>(
        __builtin_popcount(static_cast<unsigned>(_mm_movemask_ps(_mm_cmpeq_ps(v, _mm_setzero_ps())))));
    __m256d j = _mm256_sub_pd(_mm256_floor_pd(_mm256_mul_pd(_mm256_cvtps_pd(v), scale)), first);
    j = _mm256_min_pd(_mm256_max_pd(j, zero), last);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvttpd_epi32(j));
  }
#endif
  for (; i < n; ++i) {
    zeros += values[i] == 0.0f;
    const double j = std::floor(static_cast<double>(values[i]) * inv_width) - first_bin;
    out[i] = static_cast<int32_t>(std::clamp(j, 0.0, kLast));
  }
  return zeros;
}

// Values per block of binIndices: small enough that the indices stay in L1.
constexpr int kBinBlock = 512;
// Sub-histograms incremented round-robin: consecutive equal bins (the zeros of a ReLU output)
// would otherwise make each increment wait for the previous store to the same counter.
constexpr int kLanes = 4;
}  // namespace

double ActivationHistogram::binWidth() const {
  return std::ldexp(1.0, exponent_);
}

double ActivationHistogram::binLow(int i) const {
  return std::ldexp(static_cast<double>(first_bin_ + i), exponent_);
}

int64_t ActivationHistogram::absoluteBinOf(double x, int exponent) {
  return static_cast<int64_t>(std::floor(std::ldexp(x, -exponent)));
}

ActivationHistogram::Grid ActivationHistogram::canonicalGrid(double lo, double hi) {
  // No grid with 2^e < span / kHistogramBins can cover the span, so start just below that and
  // walk up; the loop runs at most a couple of steps.
  const double span = hi - lo;
  int e = kMinBinExponent;
  if (span > 0) e = std::max(e, static_cast<int>(std::floor(std::log2(span / kHistogramBins))) - 1);
  for (;; ++e) {
    const int64_t first = absoluteBinOf(lo, e);
    if (absoluteBinOf(hi, e) - first < kHistogramBins) return Grid{e, first};
  }
}

void ActivationHistogram::regrid(Grid grid) {
  if (grid.exponent == exponent_ && grid.first_bin == first_bin_) return;
  Counts rebinned{};
  const int k = grid.exponent - exponent_;
  for (int i = 0; i < kHistogramBins; ++i) {
    if (counts_[i] == 0) continue;
    const int64_t j = floorDivPow2(first_bin_ + i, k) - grid.first_bin;
    rebinned[static_cast<size_t>(std::clamp<int64_t>(j, 0, kHistogramBins - 1))] += counts_[i];
  }
  counts_ = rebinned;
  exponent_ = grid.exponent;
  first_bin_ = grid.first_bin;
}

void ActivationHistogram::widenRange(float lo, float hi) {
  // Called before count_ is updated, so empty() still tells whether min_/max_ hold data.
  min_ = empty() ? lo : std::min(min_, lo);
  max_ = empty() ? hi : std::max(max_, hi);
  // The grid follows the union of the range and 0; regrid only ever coarsens (see header).
  regrid(canonicalGrid(std::min(0.0f, min_), std::max(0.0f, max_)));
}

void ActivationHistogram::addSample(const float* values, int64_t n) {
  const FiniteRange r = finiteRangeOf(values, n);
  non_finite_ += static_cast<uint64_t>(n) - r.finite;
  if (r.finite == 0) return;
  widenRange(r.min, r.max);
  count_ += r.finite;
  // floor(x * 2^-e) as absoluteBinOf computes it, with the power of two hoisted out of the loop
  // (std::ldexp per value was most of the calibration time: 140 ms of a mobilenet_v2 sample).
  // Scaling a float by a power of two in double is exact, and the range contains 0, so
  // |x| 2^-e stays below 2^12: the bin is the same bit for bit.
  const double inv_width = std::ldexp(1.0, -exponent_);
  const bool all_finite = r.finite == static_cast<uint64_t>(n);
  // Lane k counts block positions k, k + kLanes, ...; the lanes are added into counts_ (integer
  // sums, so the counts are exactly those of one counter per bin) at the end, or before a 32-bit
  // lane counter could overflow; 32 bits keep all lanes in L1.
  std::vector<uint32_t> lanes(static_cast<size_t>(kLanes) * kHistogramBins, 0);
  const auto flush = [&] {
    for (int k = 0; k < kLanes; ++k)
      for (int b = 0; b < kHistogramBins; ++b)
        counts_[b] += lanes[static_cast<size_t>(k) * kHistogramBins + b];
    std::fill(lanes.begin(), lanes.end(), 0u);
  };
  constexpr int64_t kFlushEvery = int64_t{1} << 31;
  int32_t bins[kBinBlock];
  float finite_values[kBinBlock];
  uint64_t zeros = 0;
  for (int64_t start = 0; start < n; start += kBinBlock) {
    if (start > 0 && start % kFlushEvery == 0) flush();
    int m = static_cast<int>(std::min<int64_t>(kBinBlock, n - start));
    const float* block = values + start;
    if (!all_finite) {  // compact the finite values (NaN/inf are counted apart, never binned)
      int kept = 0;
      for (int i = 0; i < m; ++i)
        if (finiteBits(block[i])) finite_values[kept++] = block[i];
      block = finite_values;
      m = kept;
    }
    zeros += binIndices(block, m, inv_width, static_cast<double>(first_bin_), bins);
    int i = 0;
    for (; i + kLanes <= m; i += kLanes)
      for (int k = 0; k < kLanes; ++k) ++lanes[static_cast<size_t>(k) * kHistogramBins + bins[i + k]];
    for (; i < m; ++i) ++lanes[static_cast<size_t>(bins[i])];
  }
  flush();
  zeros_ += zeros;
}

ActivationHistogram ActivationHistogram::fromSample(const float* values, int64_t n) {
  ActivationHistogram h;
  h.addSample(values, n);
  return h;
}

void ActivationHistogram::accumulateCounts(const ActivationHistogram& other) {
  const int k = exponent_ - other.exponent_;
  for (int i = 0; i < kHistogramBins; ++i) {
    if (other.counts_[i] == 0) continue;
    const int64_t j = floorDivPow2(other.first_bin_ + i, k) - first_bin_;
    counts_[static_cast<size_t>(std::clamp<int64_t>(j, 0, kHistogramBins - 1))] += other.counts_[i];
  }
}

void ActivationHistogram::merge(const ActivationHistogram& other) {
  non_finite_ += other.non_finite_;
  zeros_ += other.zeros_;
  if (other.empty()) return;
  widenRange(other.min_, other.max_);
  count_ += other.count_;
  accumulateCounts(other);
}

}  // namespace npuc::quant
