// Int8 Add / Mul / rescale: the integer formulas stay within one output step of the real
// result computed from the dequantized inputs, saturate correctly, and rescale with equal
// parameters is the identity.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant/binary_requant.h"

namespace npuc::quant {
namespace {

// |dequant(result) - real| must be <= 1/2 step plus the fixed-point error, unless the real value
// is outside the output range (then the result must be the saturated end).
void expectWithinHalfStep(int8_t got, double real, QuantParams out, double slack_steps) {
  const double lo = out.scale * (-128.0 - out.zero_point), hi = out.scale * (127.0 - out.zero_point);
  if (real >= hi + 0.5 * out.scale) {
    EXPECT_EQ(got, 127);
    return;
  }
  if (real <= lo - 0.5 * out.scale) {
    EXPECT_EQ(got, -128);
    return;
  }
  EXPECT_LE(std::abs(dequantizeValue(got, out) - real), (0.5 + slack_steps) * out.scale) << real;
}

QuantParams randomParams(std::mt19937& rng) {
  std::uniform_real_distribution<float> log_scale(-8.0f, 2.0f);
  std::uniform_int_distribution<int32_t> zp(-128, 127);
  return QuantParams{std::exp2(log_scale(rng)), zp(rng)};
}

TEST(QuantBinary, AddMulRescaleMatchRealArithmetic) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> q(-128, 127);
  for (int trial = 0; trial < 300; ++trial) {
    const QuantParams a = randomParams(rng), b = randomParams(rng), out = randomParams(rng);
    const AddRequant add = makeAddRequant(a, b, out);
    const MulRequant mul = makeMulRequant(a, b, out);
    const RescaleRequant rescale = makeRescaleRequant(a, out);
    for (int i = 0; i < 200; ++i) {
      const int8_t qa = static_cast<int8_t>(q(rng)), qb = static_cast<int8_t>(q(rng));
      const double ra = dequantizeValue(qa, a), rb = dequantizeValue(qb, b);
      // Add rounds the two scaled inputs before the final rounding: up to 2^-20 relative extra.
      expectWithinHalfStep(addInt8(qa, qb, add), ra + rb, out, 1e-3);
      expectWithinHalfStep(mulInt8(qa, qb, mul), ra * rb, out, 1e-6);
      expectWithinHalfStep(rescaleInt8(qa, rescale), ra, out, 1e-6);
    }
  }
}

TEST(QuantBinary, ExactCasesAndIdentity) {
  const QuantParams p{0.5f, -3};
  const AddRequant add = makeAddRequant(p, p, p);
  EXPECT_EQ(addInt8(-3, -3, add), -3);  // 0 + 0
  EXPECT_EQ(addInt8(7, 1, add), 11);    // 5 + 2 = 7 -> 7 / 0.5 - 3 = 11
  EXPECT_EQ(addInt8(127, 127, add), 127);
  const MulRequant mul = makeMulRequant(QuantParams{1.0f, 0}, QuantParams{1.0f, 0}, QuantParams{2.0f, 0});
  EXPECT_EQ(mulInt8(3, 1, mul), 2);    // 1.5 -> 2
  EXPECT_EQ(mulInt8(-3, 1, mul), -2);  // -1.5 -> -2
  const RescaleRequant same = makeRescaleRequant(p, p);
  EXPECT_TRUE(same.identity);
  for (int v = -128; v <= 127; ++v) EXPECT_EQ(rescaleInt8(static_cast<int8_t>(v), same), v);
}

}  // namespace
}  // namespace npuc::quant
