// Accuracy metrics: known values, edge cases (zeros, identical outputs), NaN propagation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quant/metrics.h"

namespace npuc::quant {
namespace {

TEST(QuantMetrics, KnownValues) {
  const std::vector<float> ref = {3.0f, 4.0f, 0.0f};
  const std::vector<float> test = {3.0f, 4.0f, 1.0f};
  EXPECT_NEAR(cosineSimilarity(ref.data(), test.data(), 3), 25.0 / (5.0 * std::sqrt(26.0)), 1e-12);
  EXPECT_DOUBLE_EQ(euclideanDistance(ref.data(), test.data(), 3), 1.0);
  EXPECT_NEAR(sqnrDb(ref.data(), test.data(), 3), 10.0 * std::log10(25.0), 1e-12);
  const std::vector<float> neg = {-3.0f, -4.0f, 0.0f};
  EXPECT_DOUBLE_EQ(cosineSimilarity(ref.data(), neg.data(), 3), -1.0);
  const std::vector<float> doubled = {6.0f, 8.0f, 0.0f};
  EXPECT_DOUBLE_EQ(cosineSimilarity(ref.data(), doubled.data(), 3), 1.0);  // scale-blind
  EXPECT_NEAR(sqnrDb(ref.data(), doubled.data(), 3), 0.0, 1e-12);          // but SQNR is not
  const AccuracyMetrics m = compareOutputs(ref.data(), test.data(), 3);
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(m.mean_abs_error, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.euclidean, 1.0);
}

TEST(QuantMetrics, EdgeCases) {
  const std::vector<float> zeros(4, 0.0f), ones(4, 1.0f);
  EXPECT_EQ(cosineSimilarity(zeros.data(), zeros.data(), 4), 1.0);
  EXPECT_EQ(cosineSimilarity(zeros.data(), ones.data(), 4), 0.0);
  EXPECT_EQ(sqnrDb(ones.data(), ones.data(), 4), INFINITY);
  EXPECT_EQ(sqnrDb(zeros.data(), ones.data(), 4), -INFINITY);
  const std::vector<float> with_nan = {1.0f, NAN, 1.0f, 1.0f};
  const AccuracyMetrics m = compareOutputs(ones.data(), with_nan.data(), 4);
  EXPECT_TRUE(std::isnan(m.cosine));
  EXPECT_TRUE(std::isnan(m.max_abs_error));
  EXPECT_TRUE(std::isnan(m.sqnr_db));
}

}  // namespace
}  // namespace npuc::quant
