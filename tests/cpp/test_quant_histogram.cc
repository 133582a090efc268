// Streaming activation histogram: exact binning, order- and merge-independence (bit for bit),
// constant memory, non-finite values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "quant/histogram.h"

namespace npuc::quant {
namespace {

using Sample = std::vector<float>;

// Samples whose ranges grow, shrink, flip sign and jump by orders of magnitude, so that
// different orders take different re-binning paths.
std::vector<Sample> makeSamples(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Sample> samples;
  for (int s = 0; s < count; ++s) {
    const float scale = std::exp2(static_cast<float>(s % 7) * 2.0f - 4.0f);
    const float shift = (s % 3 == 0) ? 3.0f * scale : (s % 3 == 1 ? -2.0f * scale : 0.0f);
    Sample x(500);
    for (float& v : x) v = normal(rng) * scale + shift;
    if (s % 5 == 0) std::transform(x.begin(), x.end(), x.begin(), [](float v) { return std::max(v, 0.0f); });
    if (s == count / 2) x[7] = 1000.0f;  // one rare outlier
    samples.push_back(std::move(x));
  }
  return samples;
}

void expectIdentical(const ActivationHistogram& a, const ActivationHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  EXPECT_EQ(a.binExponent(), b.binExponent());
  EXPECT_EQ(a.firstBin(), b.firstBin());
  EXPECT_TRUE(a.counts() == b.counts());
}

ActivationHistogram streamInOrder(const std::vector<Sample>& samples, const std::vector<size_t>& order) {
  ActivationHistogram h;
  for (size_t i : order) h.addSample(samples[i].data(), static_cast<int64_t>(samples[i].size()));
  return h;
}

// Per-sample histograms merged pairwise in a random tree shape.
ActivationHistogram mergeAsRandomTree(const std::vector<Sample>& samples, std::mt19937& rng) {
  std::vector<ActivationHistogram> parts;
  for (const Sample& s : samples) parts.push_back(ActivationHistogram::fromSample(s.data(), s.size()));
  while (parts.size() > 1) {
    std::uniform_int_distribution<size_t> pick(0, parts.size() - 1);
    const size_t i = pick(rng);
    size_t j = pick(rng);
    if (i == j) j = (j + 1) % parts.size();
    parts[i].merge(parts[j]);
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(j));
  }
  return parts[0];
}

TEST(QuantHistogram, AnySampleOrderAndMergeOrderGivesIdenticalHistogram) {
  const std::vector<Sample> samples = makeSamples(60, 5);
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  const ActivationHistogram reference = streamInOrder(samples, order);
  // Direct binning of everything at once on the final grid.
  Sample all;
  for (const Sample& s : samples) all.insert(all.end(), s.begin(), s.end());
  expectIdentical(reference, ActivationHistogram::fromSample(all.data(), all.size()));
  std::mt19937 rng(99);
  for (int trial = 0; trial < 10; ++trial) {
    std::shuffle(order.begin(), order.end(), rng);
    expectIdentical(reference, streamInOrder(samples, order));
    expectIdentical(reference, mergeAsRandomTree(samples, rng));
  }
}

TEST(QuantHistogram, EveryValueLandsInItsBin) {
  const Sample x = {-1.0f, 0.0f, 0.3f, 2.5f, 2.5f, -0.75f, 7.0f};
  const ActivationHistogram h = ActivationHistogram::fromSample(x.data(), x.size());
  EXPECT_EQ(h.count(), x.size());
  EXPECT_EQ(h.min(), -1.0f);
  EXPECT_EQ(h.max(), 7.0f);
  for (float v : x) {
    int bin = -1;
    for (int i = 0; i < kHistogramBins; ++i)
      if (h.binLow(i) <= v && v < h.binHigh(i)) bin = i;
    ASSERT_GE(bin, 0) << v;
    EXPECT_GE(h.counts()[bin], 1u) << v;
  }
  EXPECT_EQ(h.binLow(h.zeroBin()), 0.0);
  EXPECT_EQ(std::accumulate(h.counts().begin(), h.counts().end(), uint64_t{0}), x.size());
}

TEST(QuantHistogram, GridUsesAtLeastHalfTheBins) {
  for (float hi : {1.0f, 6.0f, 1e-3f, 12345.0f}) {
    for (float lo : {0.0f, -hi / 3, -hi}) {
      const Sample x = {lo, hi};
      const ActivationHistogram h = ActivationHistogram::fromSample(x.data(), 2);
      const double used_bins = (h.max() - h.min()) / h.binWidth();
      EXPECT_GE(used_bins, kHistogramBins / 2 - 2) << lo << " " << hi;
      EXPECT_LE(h.binLow(0), lo);
      EXPECT_GT(h.binHigh(kHistogramBins - 1), hi);
    }
  }
}

TEST(QuantHistogram, MemoryIsConstantOverTenThousandSamples) {
  ActivationHistogram h;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Sample x(256);
  const size_t bytes_before = ActivationHistogram::memoryBytes();
  for (int s = 0; s < 10000; ++s) {
    for (float& v : x) v = normal(rng) * (1.0f + static_cast<float>(s % 13));
    h.addSample(x.data(), static_cast<int64_t>(x.size()));
  }
  EXPECT_EQ(ActivationHistogram::memoryBytes(), bytes_before);
  EXPECT_EQ(sizeof(h), bytes_before);
  EXPECT_LE(bytes_before, kHistogramBins * sizeof(uint64_t) + 64);  // counts + a few scalars
  EXPECT_EQ(h.count(), 10000u * 256u);
  EXPECT_EQ(std::accumulate(h.counts().begin(), h.counts().end(), uint64_t{0}), h.count());
}

TEST(QuantHistogram, NonFiniteValuesAreCountedNotBinned) {
  const Sample x = {1.0f, NAN, INFINITY, -INFINITY, -2.0f};
  ActivationHistogram h = ActivationHistogram::fromSample(x.data(), x.size());
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.nonFiniteCount(), 3u);
  EXPECT_EQ(h.min(), -2.0f);
  EXPECT_EQ(h.max(), 1.0f);
  const Sample only_nan = {NAN};
  h.merge(ActivationHistogram::fromSample(only_nan.data(), 1));
  EXPECT_EQ(h.nonFiniteCount(), 4u);
  EXPECT_EQ(h.count(), 2u);
}

TEST(QuantHistogram, AllZeroAndSubnormalSamples) {
  const Sample zeros(100, 0.0f);
  ActivationHistogram h = ActivationHistogram::fromSample(zeros.data(), zeros.size());
  EXPECT_EQ(h.counts()[h.zeroBin()], 100u);
  const Sample tiny = {1e-44f, -1e-44f};
  h.addSample(tiny.data(), 2);
  EXPECT_EQ(h.count(), 102u);
  EXPECT_LT(h.counts()[h.zeroBin()], 102u);  // subnormals still get their own bins
}

}  // namespace
}  // namespace npuc::quant
