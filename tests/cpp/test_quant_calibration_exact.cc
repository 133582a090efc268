// The fast calibration paths give the bits of the plain ones: vectorized binning and min/max
// against the scalar formula (signed zeros, NaN/inf, every tail length), per-sample histograms
// merged in sample order against streaming, in any order against each other, and the
// calibrator's parallel sample workers against one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "quant/calibrate.h"
#include "quant/histogram.h"
#include "quant_test_util.h"

namespace npuc::quant {
namespace {

uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expectSameBits(const ActivationHistogram& a, const ActivationHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(a.zeroCount(), b.zeroCount());
  EXPECT_EQ(a.nonFiniteCount(), b.nonFiniteCount());
  EXPECT_EQ(bitsOf(a.min()), bitsOf(b.min()));
  EXPECT_EQ(bitsOf(a.max()), bitsOf(b.max()));
  EXPECT_EQ(a.binExponent(), b.binExponent());
  EXPECT_EQ(a.firstBin(), b.firstBin());
  EXPECT_TRUE(a.counts() == b.counts());
}

// ReLU-like data whose first zero is -0.0 in some samples, NaN/inf in others, lengths that leave
// every tail of the 4-, 8- and 512-value blocks.
std::vector<std::vector<float>> awkwardSamples(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> out;
  const int lengths[] = {1, 3, 4, 7, 8, 9, 511, 512, 513, 1500, 4099};
  int s = 0;
  for (int n : lengths) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng) * std::exp2(static_cast<float>(s % 5) - 2.0f);
    if (s % 2 == 0) {
      for (float& v : x) v = std::max(v, 0.0f);
      x[0] = -0.0f;  // the in-order min keeps the first zero's sign
    }
    if (s % 3 == 1) {
      for (float& v : x) v = std::min(v, 0.0f);
      x[x.size() / 2] = -0.0f;
    }
    if (s % 4 == 3) {
      x[x.size() - 1] = std::numeric_limits<float>::quiet_NaN();
      x[0] = -std::numeric_limits<float>::infinity();
    }
    out.push_back(std::move(x));
    ++s;
  }
  return out;
}

TEST(QuantCalibrationExact, BinningAndExtremesMatchTheScalarFormula) {
  for (const std::vector<float>& x : awkwardSamples(1)) {
    const ActivationHistogram h = ActivationHistogram::fromSample(x.data(), static_cast<int64_t>(x.size()));
    // The plain loop the fast path replaced: in-order std::min/max over finite values, then
    // floor(x 2^-e) - first bin per value.
    float lo = INFINITY, hi = -INFINITY;
    uint64_t finite = 0, zeros = 0;
    ActivationHistogram::Counts counts{};
    for (float v : x) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      ++finite;
    }
    for (float v : x) {
      if (!std::isfinite(v)) continue;
      zeros += v == 0.0f;
      const int64_t j =
          static_cast<int64_t>(std::floor(std::ldexp(static_cast<double>(v), -h.binExponent()))) -
          h.firstBin();
      ++counts[static_cast<size_t>(std::clamp<int64_t>(j, 0, kHistogramBins - 1))];
    }
    SCOPED_TRACE(x.size());
    EXPECT_EQ(h.count(), finite);
    EXPECT_EQ(h.zeroCount(), zeros);
    EXPECT_EQ(bitsOf(h.min()), bitsOf(lo));
    EXPECT_EQ(bitsOf(h.max()), bitsOf(hi));
    EXPECT_TRUE(h.counts() == counts);
  }
}

TEST(QuantCalibrationExact, PerSampleHistogramsMergeToTheStreamedOneInAnyOrder) {
  const std::vector<std::vector<float>> samples = awkwardSamples(2);
  ActivationHistogram streamed, merged;
  for (const std::vector<float>& x : samples) {
    streamed.addSample(x.data(), static_cast<int64_t>(x.size()));
    merged.merge(ActivationHistogram::fromSample(x.data(), static_cast<int64_t>(x.size())));
  }
  // In sample order: the same bits, the sign of a zero extreme included (what the calibrator's
  // workers rely on).
  expectSameBits(streamed, merged);
  // Any other order: the same counts and extremes (a zero extreme may then carry the other sign).
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(order.begin(), order.end(), rng);
    ActivationHistogram h;
    for (size_t i : order) h.merge(ActivationHistogram::fromSample(samples[i].data(), samples[i].size()));
    EXPECT_TRUE(h.counts() == streamed.counts());
    EXPECT_EQ(h.count(), streamed.count());
    EXPECT_EQ(h.zeroCount(), streamed.zeroCount());
    EXPECT_EQ(h.nonFiniteCount(), streamed.nonFiniteCount());
    EXPECT_EQ(h.min(), streamed.min());
    EXPECT_EQ(h.max(), streamed.max());
    EXPECT_EQ(h.firstBin(), streamed.firstBin());
  }
}

TEST(QuantCalibrationExact, ParallelSampleWorkersGiveTheSingleThreadStatistics) {
  std::unique_ptr<Graph> g = testing::optimizedSharedModel("ppocr_cls.onnx");
  if (!g) GTEST_SKIP() << "shared model ppocr_cls.onnx not found";
  std::vector<std::vector<Tensor>> samples;
  for (uint32_t seed = 0; seed < 3; ++seed) samples.push_back(testing::randomNormalInputs(*g, seed));
  Calibrator serial(*g, 1);
  for (const std::vector<Tensor>& s : samples) serial.addSample(s);
  Calibrator parallel(*g, 2);
  parallel.addSamples(samples);
  ASSERT_EQ(serial.histograms().size(), parallel.histograms().size());
  for (const auto& [name, h] : serial.histograms()) {
    SCOPED_TRACE(name);
    expectSameBits(h, parallel.histograms().at(name));
  }
  // Ranges are searched per tensor in parallel: the same floats whatever the thread count.
  const auto one = serial.ranges({});
  const auto two = parallel.ranges({});
  for (const auto& [name, r] : one) {
    EXPECT_EQ(bitsOf(r.min), bitsOf(two.at(name).min));
    EXPECT_EQ(bitsOf(r.max), bitsOf(two.at(name).max));
  }
}

}  // namespace
}  // namespace npuc::quant
