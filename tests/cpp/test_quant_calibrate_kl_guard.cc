// kl_divergence's MSE guard (quant/calibrate_kl.cpp, step 4): on a per-tensor histogram where a
// few channels are much wider than the rest (as after ShuffleNetV2's depthwise convs) the plain
// KL minimum clips those channels; the guarded search must never return a range whose real
// quantization error is worse than min/max, and must still clip a rare outlier when that pays.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "calibrate_test_util.h"
#include "quant/calibrate.h"
#include "quant/qparams.h"

namespace npuc::quant {
namespace {

ClipRange klRange(const ActivationHistogram& h) {
  CalibrationOptions o;
  o.algorithm = CalibrationAlgorithm::KlDivergence;
  return calibrateRange(h, o, "test");
}

// `channels` channels of `per_channel` Student-t(4) values each (heavy tails, like conv outputs
// on smooth images), scaled geometrically from 1 to `widest` (ShuffleNetV2's first depthwise
// conv output: channel deviations 0.013 to 0.22). Plain KL clips this at ~1/3 of max|x| with
// twice the MSE of min/max (checked with the unguarded search).
std::vector<float> mixedChannels(int channels, int per_channel, float widest, uint32_t seed) {
  std::mt19937 rng(seed);
  std::student_t_distribution<float> unit(4.0f);
  std::vector<float> x;
  x.reserve(static_cast<size_t>(channels) * static_cast<size_t>(per_channel));
  for (int c = 0; c < channels; ++c) {
    const float sigma = channels == 1 ? 1.0f : std::pow(widest, static_cast<float>(c) / (channels - 1));
    for (int i = 0; i < per_channel; ++i) x.push_back(sigma * unit(rng));
  }
  return x;
}

TEST(QuantCalibrateKlGuard, ChannelsOfVeryDifferentWidthsAreNotClippedBelowMinMaxQuality) {
  const std::vector<float> x = mixedChannels(24, 6272, 16.0f, 5);
  const ActivationHistogram h = ActivationHistogram::fromSample(x.data(), static_cast<int64_t>(x.size()));
  const ClipRange observed = minMaxRange(h);
  const ClipRange kl = klRange(h);
  EXPECT_LE(realQuantizationMse(x, kl), realQuantizationMse(x, observed) * 1.02)
      << "kl [" << kl.min << ", " << kl.max << "]";
  EXPECT_LE(expectedQuantizationMse(h, kl.min, kl.max),
            expectedQuantizationMse(h, observed.min, observed.max));
}

TEST(QuantCalibrateKlGuard, RareOutlierIsStillClipped) {
  std::vector<float> x = mixedChannels(1, 1 << 20, 1.0f, 6);  // one Student-t(4)
  // 100 sigma: clipping it costs (100 - T)^2 / 2^20 in MSE, far less than the min/max grid's
  // rounding error (a 300-sigma outlier would cost more than it saves, and the guard keeps it).
  constexpr float kOutlier = 100.0f;
  x[7] = kOutlier;
  const ActivationHistogram h = ActivationHistogram::fromSample(x.data(), static_cast<int64_t>(x.size()));
  const ClipRange kl = klRange(h);
  EXPECT_LT(kl.max, 0.5f * kOutlier) << kl.min << " " << kl.max;
  EXPECT_LT(realQuantizationMse(x, kl), 0.7 * realQuantizationMse(x, minMaxRange(h)));
}

}  // namespace
}  // namespace npuc::quant
