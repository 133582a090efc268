// mmse calibration: the int8 grid (step, zero_point) minimizing the expected squared error of
// quantizing the observed distribution, searched over both ends of the range:
//
//   grid points k * step for k in [-128 - zp, 127 - zp]   (0 is always a grid point)
//   error(x) = (x - nearest grid point)^2   inside [lo, hi] = [(-128 - zp) step, (127 - zp) step]
//            = (x - hi)^2 or (lo - x)^2     beyond (clipping)
//
// with values uniform inside each histogram bin. The rounding error is integrated exactly per
// bin rather than modelled as step^2 / 12: that model is wrong precisely for heavy-tailed data,
// where the step is wider than the bulk and values near 0 round to the exact zero point.
//
// Search: step over a geometric ladder below the min/max step, and for each step all 256 zero
// points. Per step, prefix sums of the per-bin rounding error make each zero point O(1); the
// clipping tails use prefix sums of n, n*centre, n*centre^2. About 1024 x (2048 + 256) cheap
// evaluations, exhaustive in both ends, so no local minimum can trap it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "quant/calibrate.h"
#include "quant/calibrate_detail.h"
#include "quant/int_limits.h"
#include "quant/qparams.h"

namespace npuc::quant {
namespace {

constexpr double kSteps = kActivationQMax - kActivationQMin;  // 255
// Step ladder: kStepCandidates steps from the min/max step down to 1/kSmallestStepFraction of
// it (a clip at 1/4096 of the observed range is far below anything useful); consecutive steps
// differ by < 1%, finer than the flat optimum of the MSE needs.
constexpr int kStepCandidates = 1024;
constexpr double kSmallestStepFraction = 4096.0;

// Count of bin i that the uniform-within-bin model applies to: values exactly 0 are left out,
// because 0 is a grid point of every candidate (and inside every range), so they cost nothing;
// modelling half a ReLU output as spread over [0, w) would overstate the error.
uint64_t modelledCount(const ActivationHistogram& h, int i) {
  return h.counts()[i] - (i == h.zeroBin() ? h.zeroCount() : 0);
}

// Antiderivative of (distance from x to the nearest multiple of `step`)^2. Double suffices:
// x / step stays below 255 * kSmallestStepFraction ~ 2^20 inside the searched ranges, so the
// difference across one bin keeps ~30 significant bits, far more than the search needs.
double roundingErrorIntegral(double x, double step) {
  const double u = x / step + 0.5;
  const double k = std::floor(u);
  const double d = (u - k - 0.5) * step;  // signed distance to the nearest grid point
  const double cube = step * step * step;
  return k * cube / 12.0 + (d * d * d + cube / 8.0) / 3.0;
}

// Prefix sums over window bins of n, n*centre, n*centre^2: entry i covers bins [0, i).
struct BinMoments {
  std::vector<long double> n, n_centre, n_centre2;
  double first_edge, width;

  explicit BinMoments(const ActivationHistogram& h) : first_edge(h.binLow(0)), width(h.binWidth()) {
    n.assign(kHistogramBins + 1, 0.0L);
    n_centre = n;
    n_centre2 = n;
    for (int i = 0; i < kHistogramBins; ++i) {
      const long double c = static_cast<long double>(modelledCount(h, i));
      const long double centre = h.binLow(i) + 0.5 * width;
      n[i + 1] = n[i] + c;
      n_centre[i + 1] = n_centre[i] + c * centre;
      n_centre2[i + 1] = n_centre2[i] + c * centre * centre;
    }
  }

  // Sum over bins [a, b) of n * E[(x - t)^2] with x uniform in each bin.
  long double squaredDistance(int a, int b, long double t) const {
    const long double s0 = n[b] - n[a], s1 = n_centre[b] - n_centre[a], s2 = n_centre2[b] - n_centre2[a];
    return s2 - 2.0L * t * s1 + t * t * s0 + s0 * width * width / 12.0L;
  }
  // First bin whose centre is >= x (bins before it are clipped to lo = x).
  int firstBinCentredAtOrAbove(double x) const {
    const double i = std::ceil((x - first_edge) / width - 0.5);
    return static_cast<int>(std::clamp(i, 0.0, static_cast<double>(kHistogramBins)));
  }
  // First bin whose centre is > x (it and the bins after it are clipped to hi = x).
  int firstBinCentredAbove(double x) const {
    const double i = std::floor((x - first_edge) / width - 0.5) + 1.0;
    return static_cast<int>(std::clamp(i, 0.0, static_cast<double>(kHistogramBins)));
  }
};

// The bins the model integrates over, extracted once (binLow is an ldexp call): low edge and
// modelled count of every non-empty bin.
struct ModelBins {
  std::vector<int> index;
  std::vector<double> low, count;
  double width;

  explicit ModelBins(const ActivationHistogram& h) : width(h.binWidth()) {
    for (int i = 0; i < kHistogramBins; ++i) {
      const uint64_t n = modelledCount(h, i);
      if (n == 0) continue;
      index.push_back(i);
      low.push_back(h.binLow(i));
      count.push_back(static_cast<double>(n));
    }
  }
};

// Prefix sums of each bin's rounding error on the grid of multiples of `step`, into `prefix`
// (kHistogramBins + 1 entries; `per_bin` is scratch of kHistogramBins zeros, left zeroed).
// Adjacent occupied bins share an edge (low + width of one is exactly the low of the next: both
// are small integers times the power-of-two width), so the integral there is computed once;
// dividing by the power-of-two width equals multiplying by its exact inverse. Same bits as
// evaluating both edges of every bin and dividing.
void roundingErrorPrefix(const ModelBins& bins, double step, std::vector<double>& per_bin,
                         std::vector<long double>& prefix) {
  const double inv_width = 1.0 / bins.width;
  int previous = -2;  // index of the last occupied bin
  double previous_high = 0.0;
  for (size_t b = 0; b < bins.index.size(); ++b) {
    const double a = bins.low[b];
    const double low = bins.index[b] == previous + 1 ? previous_high : roundingErrorIntegral(a, step);
    const double high = roundingErrorIntegral(a + bins.width, step);
    per_bin[static_cast<size_t>(bins.index[b])] = bins.count[b] * (high - low) * inv_width;
    previous = bins.index[b];
    previous_high = high;
  }
  prefix[0] = 0.0L;
  for (int i = 0; i < kHistogramBins; ++i) prefix[i + 1] = prefix[i] + per_bin[static_cast<size_t>(i)];
  for (int i : bins.index) per_bin[static_cast<size_t>(i)] = 0.0;
}

// Total squared error of the grid (step, zero_point) given that grid's rounding-error prefix.
long double gridError(const BinMoments& m, const std::vector<long double>& rounding, double step,
                      int32_t zero_point) {
  const double lo = (kActivationQMin - zero_point) * step;
  const double hi = (kActivationQMax - zero_point) * step;
  const int lb = m.firstBinCentredAtOrAbove(lo);
  const int hb = std::max(lb, m.firstBinCentredAbove(hi));
  return (rounding[hb] - rounding[lb]) + m.squaredDistance(0, lb, lo) +
         m.squaredDistance(hb, kHistogramBins, hi);
}

}  // namespace

struct QuantizationMse::Tables {
  BinMoments moments;
  ModelBins bins;
  explicit Tables(const ActivationHistogram& h) : moments(h), bins(h) {}
};

QuantizationMse::QuantizationMse(const ActivationHistogram& h) : h_(h) {
  if (!h.empty()) tables_ = std::make_unique<Tables>(h);
}
QuantizationMse::~QuantizationMse() = default;

double QuantizationMse::operator()(double lo, double hi) const {
  if (h_.empty()) return 0.0;
  // Evaluate the grid the quantizer will really use for this range.
  const QuantParams p = chooseActivationParams(static_cast<float>(lo), static_cast<float>(hi));
  std::vector<double> per_bin(kHistogramBins, 0.0);
  std::vector<long double> rounding(kHistogramBins + 1);
  roundingErrorPrefix(tables_->bins, p.scale, per_bin, rounding);
  const long double err = gridError(tables_->moments, rounding, p.scale, p.zero_point);
  return static_cast<double>(err / static_cast<long double>(h_.count()));
}

double expectedQuantizationMse(const ActivationHistogram& h, double lo, double hi) {
  return QuantizationMse(h)(lo, hi);
}

ClipRange mmseRange(const ActivationHistogram& h) {
  const ClipRange observed = minMaxRange(h);
  const QuantParams widest = chooseActivationParams(observed.min, observed.max);
  // Nothing to trade off for an all-zero (or subnormal-range) tensor: its grid is degenerate.
  if (observed.max - observed.min <= 0.0f || widest.scale == kDegenerateRangeScale) return observed;
  const BinMoments m(h);
  const ModelBins bins(h);
  std::vector<double> per_bin(kHistogramBins, 0.0);
  std::vector<long double> rounding(kHistogramBins + 1);
  long double best = std::numeric_limits<long double>::infinity();
  double best_step = widest.scale;
  int32_t best_zp = widest.zero_point;
  for (int k = 0; k < kStepCandidates; ++k) {
    // Float steps, as the quantizer stores them, so the returned range reproduces this grid.
    const double fraction = std::pow(kSmallestStepFraction, -static_cast<double>(k) / (kStepCandidates - 1));
    const double step = static_cast<float>(widest.scale * fraction);
    roundingErrorPrefix(bins, step, per_bin, rounding);
    for (int32_t zp = kActivationQMin; zp <= kActivationQMax; ++zp) {
      const long double err = gridError(m, rounding, step, zp);
      if (err < best) {
        best = err;
        best_step = step;
        best_zp = zp;
      }
    }
  }
  // The range of the winning grid itself (not clamped to the observed data: clamping would
  // shrink the step and change the grid that was evaluated).
  return ClipRange{static_cast<float>((kActivationQMin - best_zp) * best_step),
                   static_cast<float>((kActivationQMax - best_zp) * best_step)};
}

}  // namespace npuc::quant
