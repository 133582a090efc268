// Int8 lookup tables: every entry is the correctly rounded (half away from zero), saturated
// requantization of the real function at that input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "quant/lut.h"

namespace npuc::quant {
namespace {

const LutFunction kAllFunctions[] = {LutFunction::Sigmoid,   LutFunction::Tanh, LutFunction::SiLU,
                                     LutFunction::HardSwish, LutFunction::GELU, LutFunction::Exp};

// Every unsaturated entry dequantizes to within half an output step of the true value; a
// saturated entry is only allowed where the true value is beyond the representable range.
void expectCorrectlyRounded(LutFunction f, QuantParams in, QuantParams out) {
  const Int8Lut lut = buildLut(f, in, out);
  const double lo = out.scale * (-128.0 - out.zero_point);
  const double hi = out.scale * (127.0 - out.zero_point);
  for (int q = -128; q <= 127; ++q) {
    const double x = static_cast<double>(in.scale) * (q - in.zero_point);
    const double y = evaluateLutFunction(f, x);
    const int8_t e = lookupLut(lut, static_cast<int8_t>(q));
    const double got = static_cast<double>(out.scale) * (e - out.zero_point);
    const double tol = 0.5 * out.scale * (1 + 1e-9);
    if (e == 127 && y > hi) continue;
    if (e == -128 && y < lo) continue;
    ASSERT_LE(std::abs(got - y), tol) << lutFunctionName(f) << " q=" << q << " x=" << x;
  }
}

TEST(QuantLut, EntriesAreCorrectlyRoundedForAllFunctions) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> log_scale(-6.0f, 0.0f);
  std::uniform_int_distribution<int32_t> zp(-128, 127);
  for (LutFunction f : kAllFunctions) {
    for (int trial = 0; trial < 50; ++trial) {
      const QuantParams in{std::exp2(log_scale(rng)), zp(rng)};
      const QuantParams out{std::exp2(log_scale(rng)), zp(rng)};
      expectCorrectlyRounded(f, in, out);
    }
  }
}

TEST(QuantLut, MonotoneFunctionsGiveMonotoneTables) {
  const QuantParams in{0.05f, 3}, out{0.01f, -100};
  for (LutFunction f : {LutFunction::Sigmoid, LutFunction::Tanh, LutFunction::Exp}) {
    const Int8Lut lut = buildLut(f, in, out);
    for (int q = -127; q <= 127; ++q)
      ASSERT_LE(lookupLut(lut, static_cast<int8_t>(q - 1)), lookupLut(lut, static_cast<int8_t>(q)))
          << lutFunctionName(f) << " q=" << q;
  }
}

TEST(QuantLut, ExactTiesRoundHalfAwayFromZero) {
  // f(x) = x with output scale twice the input scale: odd inputs land exactly on .5.
  const Int8Lut lut = buildLut([](double x) { return x; }, QuantParams{1.0f, 0}, QuantParams{2.0f, 0});
  EXPECT_EQ(lookupLut(lut, 1), 1);
  EXPECT_EQ(lookupLut(lut, -1), -1);
  EXPECT_EQ(lookupLut(lut, 3), 2);
  EXPECT_EQ(lookupLut(lut, -3), -2);
  EXPECT_EQ(lookupLut(lut, 127), 64);
  EXPECT_EQ(lookupLut(lut, -127), -64);
  EXPECT_EQ(lookupLut(lut, -128), -64);
}

TEST(QuantLut, KnownValuesAndSaturation) {
  const QuantParams in{0.1f, 0};
  // HardSwish: 0 below -3, identity above +3.
  const Int8Lut hs = buildLut(LutFunction::HardSwish, in, QuantParams{0.1f, 0});
  EXPECT_EQ(lookupLut(hs, -50), 0);
  EXPECT_EQ(lookupLut(hs, 0), 0);
  EXPECT_EQ(lookupLut(hs, 40), 40);
  EXPECT_EQ(lookupLut(hs, 127), 127);
  // Sigmoid(0) = 0.5 with output [0, 1): scale 1/256, zp -128 -> exactly 0.
  const Int8Lut sg = buildLut(LutFunction::Sigmoid, in, QuantParams{1.0f / 256, -128});
  EXPECT_EQ(lookupLut(sg, 0), 0);
  EXPECT_EQ(lookupLut(sg, 127), 127);  // 0.99999 * 256 - 128 = 127.99 -> saturates
  // Exp overflowing double saturates instead of producing garbage.
  const Int8Lut ex = buildLut(LutFunction::Exp, QuantParams{10.0f, 0}, QuantParams{0.5f, -128});
  EXPECT_EQ(lookupLut(ex, 127), 127);
  EXPECT_EQ(lookupLut(ex, -128), -128);
  // GELU is the exact erf form: GELU(1) = 0.841344746...
  const Int8Lut ge = buildLut(LutFunction::GELU, QuantParams{1.0f, 0}, QuantParams{0.001f, 0});
  EXPECT_EQ(lookupLut(ge, 1), 127);  // 841 saturates: output range is [-0.128, 0.127]
  const Int8Lut ge2 = buildLut(LutFunction::GELU, QuantParams{0.01f, 0}, QuantParams{0.0001f, 0});
  EXPECT_EQ(lookupLut(ge2, 1), 50);  // GELU(0.01) = 0.0050399 -> 50.399
}

TEST(QuantLut, ApplyMatchesLookupAndOpTypesMap) {
  const Int8Lut lut = buildLut(LutFunction::Tanh, QuantParams{0.03f, -5}, QuantParams{1.0f / 128, 0});
  std::vector<int8_t> in(256), out(256);
  for (int i = 0; i < 256; ++i) in[i] = static_cast<int8_t>(i - 128);
  applyLut(lut, in.data(), 256, out.data());
  for (int i = 0; i < 256; ++i) EXPECT_EQ(out[i], lookupLut(lut, in[i]));
  EXPECT_EQ(lutFunctionFromOpType("Silu"), LutFunction::SiLU);
  EXPECT_EQ(lutFunctionFromOpType("Gelu"), LutFunction::GELU);
  EXPECT_EQ(lutFunctionFromOpType("HardSwish"), LutFunction::HardSwish);
  EXPECT_THROW(lutFunctionFromOpType("Softmax"), UnsupportedOpError);
}

}  // namespace
}  // namespace npuc::quant
