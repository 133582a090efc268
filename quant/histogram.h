// Streaming activation statistics for calibration: exact running min/max and a fixed-size
// histogram, collected per sample and merged across samples without keeping any activation
// (memory is sizeof(ActivationHistogram), whatever the number of samples).
//
// The bins lie on a power-of-two grid anchored at zero: bin j (absolute index) covers
// [j * 2^e, (j + 1) * 2^e), and the histogram keeps a window of kHistogramBins consecutive
// absolute bins starting at firstBin(). For a range [lo, hi] (always widened to contain 0) the
// grid is canonical: e is the smallest exponent whose window starting at floor(lo / 2^e) reaches
// hi. When a sample or a merge widens the range, e can only grow, and every old bin lies
// entirely inside one new bin (2^e' is a multiple of 2^e and both grids contain 0), so
// re-binning moves whole counts exactly. Binning x is exact too (x * 2^-e is a power-of-two
// scaling). Hence the final counts equal binning all values directly on the grid of the global
// range: they do not depend on sample order or merge order at all, bit for bit.
//
// Why this grid rather than a symmetric abs-max one: activations are often one-sided (ReLU,
// Sigmoid), and a window that follows [lo, hi] spends at least ~half of the 2048 bins on the
// data either way, where a symmetric grid wastes the unused side. The price of exactness is the
// power-of-two step: the data covers between ~1024 and 2048 bins, never fewer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace npuc::quant {

constexpr int kHistogramBins = 2048;
// Smallest bin exponent: 2^-160 is far below the smallest float (2^-149), so even a range made
// of subnormals gets distinct bins, and x * 2^160 still fits a double exactly.
constexpr int kMinBinExponent = -160;

class ActivationHistogram {
 public:
  using Counts = std::array<uint64_t, kHistogramBins>;

  // Adds one sample (e.g. one calibration image's activation tensor). NaN and +-inf are not
  // binned; they are counted in nonFiniteCount() so the caller can warn.
  void addSample(const float* values, int64_t n);
  static ActivationHistogram fromSample(const float* values, int64_t n);
  // Adds another histogram's counts (any grid) into this one.
  void merge(const ActivationHistogram& other);

  bool empty() const { return count_ == 0; }
  uint64_t count() const { return count_; }  // finite values seen
  uint64_t nonFiniteCount() const { return non_finite_; }
  // Values exactly 0 (ReLU floors, padding). They are also in the bin holding 0; kept apart
  // because they are exact under any int8 range, which calibrators may want to know.
  uint64_t zeroCount() const { return zeros_; }
  // Exact extremes of the finite values seen (0 and 0 when empty).
  float min() const { return min_; }
  float max() const { return max_; }

  int binExponent() const { return exponent_; }
  double binWidth() const;
  int64_t firstBin() const { return first_bin_; }
  // Real bounds of window bin i (0 <= i < kHistogramBins).
  double binLow(int i) const;
  double binHigh(int i) const { return binLow(i) + binWidth(); }
  // Window index of the bin holding real 0 (zero is always inside the window).
  int zeroBin() const { return static_cast<int>(-first_bin_); }
  const Counts& counts() const { return counts_; }
  // Footprint of the statistics: constant by construction, reported for memory checks.
  static constexpr size_t memoryBytes() { return sizeof(ActivationHistogram); }

 private:
  struct Grid {
    int exponent;
    int64_t first_bin;
  };
  static Grid canonicalGrid(double lo, double hi);
  static int64_t absoluteBinOf(double x, int exponent);
  // Re-bins this histogram's counts onto `grid` (which must be at least as coarse).
  void regrid(Grid grid);
  // Adds counts of `other` (on a grid no coarser than ours) into ours.
  void accumulateCounts(const ActivationHistogram& other);
  void widenRange(float lo, float hi);

  Counts counts_{};
  uint64_t count_ = 0;
  uint64_t non_finite_ = 0;
  uint64_t zeros_ = 0;
  float min_ = 0.0f;
  float max_ = 0.0f;
  int exponent_ = kMinBinExponent;
  int64_t first_bin_ = 0;
};

}  // namespace npuc::quant
