// Weight outlier detection: well-behaved tensors pass, a tensor with a weight far beyond its
// distribution is flagged with the suggestion, small tensors cannot hide a lone outlier.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "quant/weight_outliers.h"

namespace npuc::quant {
namespace {

std::vector<float> gaussianWeights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> w(n);
  for (float& v : w) v = d(rng);
  return w;
}

TEST(QuantOutliers, GaussianWeightsAreNotFlagged) {
  const std::vector<float> w = gaussianWeights(1 << 20, 1);
  const WeightOutlierRow r = measureWeightOutliers("layer1.conv.weight", w.data(), w.size());
  EXPECT_FALSE(r.flagged);
  EXPECT_GT(r.ratio, 1.0);
  EXPECT_LT(r.ratio, 2.0);
  EXPECT_NEAR(r.robust_range, 3.29f * 0.02f, 0.003f);  // 99.9th percentile of |N(0, s)|
  EXPECT_TRUE(r.suggestion.empty());
}

TEST(QuantOutliers, FarOutlierIsFlaggedWithSuggestion) {
  std::vector<float> w = gaussianWeights(100000, 2);
  w[123] = -0.02f * 25;  // 25 sigma
  const WeightOutlierRow r = measureWeightOutliers("stem.weight", w.data(), w.size());
  EXPECT_TRUE(r.flagged);
  EXPECT_FLOAT_EQ(r.max_abs, 0.5f);
  EXPECT_GT(r.ratio, 6.0);
  EXPECT_EQ(r.suggestion, kOutlierSuggestion);
  // A looser threshold accepts it.
  OutlierOptions loose;
  loose.ratio_threshold = 10.0;
  EXPECT_FALSE(measureWeightOutliers("stem.weight", w.data(), w.size(), loose).flagged);
}

TEST(QuantOutliers, SmallTensorCannotHideALoneOutlier) {
  // 64 weights: the 99.9th percentile rank is the maximum itself; it must not be used.
  std::vector<float> w = gaussianWeights(64, 3);
  w[10] = 1.0f;
  EXPECT_TRUE(measureWeightOutliers("fc.bias_like", w.data(), w.size()).flagged);
  const std::vector<float> zeros(16, 0.0f);
  const WeightOutlierRow z = measureWeightOutliers("zeros", zeros.data(), zeros.size());
  EXPECT_FALSE(z.flagged);
  EXPECT_EQ(z.ratio, 1.0);
  std::vector<float> lone(16, 0.0f);
  lone[3] = 0.1f;
  EXPECT_TRUE(measureWeightOutliers("lone", lone.data(), lone.size()).flagged);
  OutlierOptions bad;
  bad.percentile = 100.0;
  EXPECT_THROW(measureWeightOutliers("x", zeros.data(), zeros.size(), bad), ConfigError);
}

TEST(QuantOutliers, TableListsEveryTensorAndSuggestsOnlyForFlagged) {
  std::vector<float> good = gaussianWeights(10000, 4);
  std::vector<float> bad = gaussianWeights(10000, 5);
  bad[0] = 2.0f;
  const std::string table =
      formatOutlierTable({measureWeightOutliers("good.weight", good.data(), good.size()),
                          measureWeightOutliers("bad.weight", bad.data(), bad.size())});
  EXPECT_NE(table.find("good.weight"), std::string::npos);
  const size_t bad_line = table.find("bad.weight");
  ASSERT_NE(bad_line, std::string::npos);
  EXPECT_EQ(table.find("mmse"), table.find("mmse", bad_line));  // only the flagged row suggests
  EXPECT_NE(table.find("hybrid quantization", bad_line), std::string::npos);
}

}  // namespace
}  // namespace npuc::quant
