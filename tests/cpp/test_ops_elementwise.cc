// Elementwise op family: unary math against libm / closed forms, broadcasting against a naive
// index-arithmetic reference, integer semantics, comparisons, Where, Cast, and shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ew_test_util.h"
#include "opset/ops/ew_math.h"

namespace npuc {
namespace {

using ewtest::constant;
using ewtest::expectClose;
using ewtest::expectThrowWith;
using ewtest::floats;
using ewtest::In;
using ewtest::int64s;
using ewtest::OneNode;
using ewtest::randomFloats;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs a unary op on `x` and compares with ref applied per element.
void checkUnary(const std::string& op, const Tensor& x, const std::function<double(double)>& ref,
                float rtol = 2e-6f, float atol = 1e-7f, const Attributes& attrs = {}) {
  SCOPED_TRACE(op);
  OneNode n(op, {In{x}});
  for (auto& [k, v] : attrs.all()) n.attr(k, v);
  Tensor y = n.run0();
  Tensor expected(DType::Float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    expected.data<float>()[i] = static_cast<float>(ref(x.data<float>()[i]));
  expectClose(y, expected, rtol, atol);
}

// Values spanning the interesting ranges of the activations, including saturation.
Tensor activationInputs() {
  std::vector<float> v;
  for (float x = -30.0f; x <= 30.0f; x += 0.37f) v.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-6f, -1e-6f, 1e-3f, -1e-3f, 0.3f, -0.3f, 0.62f, 0.63f, 88.0f, -88.0f, 100.0f,
                  -100.0f}) {
    v.push_back(x);
  }
  return floats(v, {static_cast<int64_t>(v.size())});
}

TEST(OpsElementwiseFastMath, ExpMatchesLibmEverywhere) {
  // Walk the whole finite range with a geometric-ish step plus the edges.
  for (float x = -104.0f; x <= 89.0f; x += 0.01171875f) {
    const float got = ew::fastExp(x), want = std::exp(x);
    if (want < std::numeric_limits<float>::min()) {
      EXPECT_LE(got, std::numeric_limits<float>::min()) << x;  // denormal range flushes
    } else if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(got)) << x;
    } else {
      EXPECT_NEAR(got, want, 3e-7 * want) << x;
    }
  }
  EXPECT_EQ(ew::fastExp(kInf), kInf);
  EXPECT_EQ(ew::fastExp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(ew::fastExp(kNaN)));
  EXPECT_EQ(ew::fastExp(0.0f), 1.0f);
}

TEST(OpsElementwiseFastMath, TanhIsAccurateNearZeroAndSaturates) {
  for (float x = -12.0f; x <= 12.0f; x += 0.001953125f) {
    EXPECT_NEAR(ew::fastTanh(x), std::tanh(x), 2e-7 + 2e-6 * std::fabs(std::tanh(x))) << x;
  }
  EXPECT_NEAR(ew::fastTanh(1e-5f), 1e-5f, 1e-11);  // relative accuracy for tiny inputs
  EXPECT_EQ(ew::fastTanh(100.0f), 1.0f);
  EXPECT_EQ(ew::fastTanh(-100.0f), -1.0f);
}

TEST(OpsElementwiseFastMath, ErfIsAccurateAbsolutelyAndNearZero) {
  for (float x = -10.0f; x <= 10.0f; x += 0.0009765625f) {
    const double want = std::erf(static_cast<double>(x));
    EXPECT_NEAR(ew::fastErf(x), want, 2.5e-7 + 1e-6 * std::fabs(want)) << x;
  }
  EXPECT_NEAR(ew::fastErf(1e-6f), 1.1283791670955126e-6, 1e-12);
  EXPECT_EQ(ew::fastErf(kInf), 1.0f);
  EXPECT_EQ(ew::fastErf(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(ew::fastErf(kNaN)));
}

TEST(OpsElementwiseFastMath, OnePlusErfKeepsTheNegativeTail) {
  // Relative accuracy down to erfc ~ 1e-30, where 1 + erf in float would be all cancellation.
  for (float x = -8.0f; x <= 4.0f; x += 0.001953125f) {
    const double want = std::erfc(-static_cast<double>(x));
    EXPECT_NEAR(ew::fastOnePlusErf(x), want, 1e-5 * want) << x;
  }
}

TEST(OpsElementwiseUnary, ActivationsMatchClosedForms) {
  const Tensor x = activationInputs();
  checkUnary(
      "Sigmoid", x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 2e-6f, 1e-30f);
  checkUnary("Tanh", x, [](double v) { return std::tanh(v); });
  checkUnary("Relu", x, [](double v) { return v > 0 ? v : 0.0; });
  checkUnary("Softsign", x, [](double v) { return v / (1 + std::fabs(v)); });
  checkUnary(
      "Softplus", x, [](double v) { return std::log1p(std::exp(v)); }, 2e-6f, 1e-12f);
  checkUnary(
      "Mish", x, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, 4e-6f, 1e-12f);
  checkUnary("HardSwish", x, [](double v) { return v * std::min(1.0, std::max(0.0, v / 6 + 0.5)); });
  checkUnary(
      "Elu", x, [](double v) { return v > 0 ? v : std::expm1(v); }, 2e-6f, 2e-7f);
  checkUnary("Erf", x, [](double v) { return std::erf(v); });
  checkUnary("Neg", x, [](double v) { return -v; });
  checkUnary("Abs", x, [](double v) { return std::fabs(v); });
  checkUnary(
      "Sin", x, [](double v) { return std::sin(v); }, 1e-5f, 1e-6f);
  checkUnary(
      "Cos", x, [](double v) { return std::cos(v); }, 1e-5f, 1e-6f);
  checkUnary("Floor", x, [](double v) { return std::floor(v); });
  checkUnary("Ceil", x, [](double v) { return std::ceil(v); });
}

TEST(OpsElementwiseUnary, AttributesAreHonoured) {
  const Tensor x = activationInputs();
  Attributes a;
  a.set("alpha", 0.25f);
  checkUnary(
      "LeakyRelu", x, [](double v) { return v >= 0 ? v : 0.25 * v; }, 2e-6f, 1e-7f, a);
  checkUnary(
      "Elu", x, [](double v) { return v > 0 ? v : 0.25 * std::expm1(v); }, 2e-6f, 2e-7f, a);
  a.set("beta", 0.75f);
  checkUnary(
      "HardSigmoid", x, [](double v) { return std::min(1.0, std::max(0.0, 0.25 * v + 0.75)); }, 2e-6f, 1e-7f,
      a);
  a.set("gamma", 2.0f);
  checkUnary(
      "Selu", x, [](double v) { return 2.0 * (v > 0 ? v : 0.25 * std::expm1(v)); }, 2e-6f, 2e-7f, a);
  // Defaults.
  checkUnary("LeakyRelu", x, [](double v) { return v >= 0 ? v : 0.01 * v; });
  checkUnary("HardSigmoid", x, [](double v) { return std::min(1.0, std::max(0.0, 0.2 * v + 0.5)); });
  checkUnary(
      "Selu", x,
      [](double v) { return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * std::expm1(v)); }, 4e-6f,
      2e-7f);
}

TEST(OpsElementwiseUnary, TrigonometricAndHyperbolic) {
  const Tensor unit = randomFloats({40}, -0.99f, 0.99f, 12);
  checkUnary("Tan", unit, [](double v) { return std::tan(v); });
  checkUnary("Asin", unit, [](double v) { return std::asin(v); });
  checkUnary("Acos", unit, [](double v) { return std::acos(v); });
  checkUnary("Atan", unit, [](double v) { return std::atan(v); });
  checkUnary(
      "Atanh", unit, [](double v) { return std::atanh(v); }, 4e-6f);
  const Tensor wide = randomFloats({40}, -5, 5, 13);
  checkUnary("Sinh", wide, [](double v) { return std::sinh(v); });
  checkUnary("Cosh", wide, [](double v) { return std::cosh(v); });
  checkUnary("Asinh", wide, [](double v) { return std::asinh(v); });
  checkUnary("Acosh", randomFloats({40}, 1, 50, 14), [](double v) { return std::acosh(v); });
}

TEST(OpsElementwiseUnary, ThresholdedReluCeluShrink) {
  const Tensor x = activationInputs();
  Attributes a;
  a.set("alpha", 2.0f);
  checkUnary(
      "ThresholdedRelu", x, [](double v) { return v > 2 ? v : 0.0; }, 2e-6f, 1e-7f, a);
  checkUnary(
      "Celu", x, [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * std::expm1(v / 2)); }, 2e-6f,
      2e-7f, a);
  checkUnary(
      "Celu", x, [](double v) { return std::max(0.0, v) + std::min(0.0, std::expm1(v)); }, 2e-6f, 2e-7f);
  Attributes sh;
  sh.set("bias", 1.5f);
  sh.set("lambd", 1.0f);
  checkUnary(
      "Shrink", x, [](double v) { return v < -1 ? v + 1.5 : (v > 1 ? v - 1.5 : 0.0); }, 2e-6f, 1e-7f, sh);
}

TEST(OpsElementwiseUnary, PositiveDomainMath) {
  const Tensor x = randomFloats({5, 7}, 0.01f, 50.0f, 3);
  checkUnary("Exp", x, [](double v) { return std::exp(v); });
  checkUnary("Log", x, [](double v) { return std::log(v); });
  checkUnary("Sqrt", x, [](double v) { return std::sqrt(v); });
  checkUnary("Reciprocal", x, [](double v) { return 1.0 / v; });
  Tensor y = OneNode("Log", {In{floats({0.0f, -1.0f}, {2})}}).run0();
  EXPECT_EQ(y.data<float>()[0], -kInf);
  EXPECT_TRUE(std::isnan(y.data<float>()[1]));
}

TEST(OpsElementwiseUnary, RoundIsHalfToEven) {
  Tensor y = OneNode("Round", {In{floats({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, 2.6f}, {8})}}).run0();
  const std::vector<float> want = {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 2.0f, 3.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << i;
}

TEST(OpsElementwiseUnary, IntegerSignAbsNegRelu) {
  const Tensor x = int64s({-5, 0, 7, std::numeric_limits<int32_t>::max() + int64_t{10}}, {4});
  EXPECT_EQ(OneNode("Sign", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{-1, 0, 1, 1}));
  EXPECT_EQ(OneNode("Abs", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{5, 0, 7, 2147483657}));
  EXPECT_EQ(OneNode("Neg", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{5, 0, -7, -2147483657}));
  EXPECT_EQ(OneNode("Relu", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 0, 7, 2147483657}));
  Tensor s = OneNode("Sign", {In{floats({-2.0f, 0.0f, 3.0f, kNaN}, {4})}}).run0();
  EXPECT_EQ(s.data<float>()[0], -1.0f);
  EXPECT_EQ(s.data<float>()[1], 0.0f);
  EXPECT_EQ(s.data<float>()[2], 1.0f);
  EXPECT_TRUE(std::isnan(s.data<float>()[3]));
}

TEST(OpsElementwiseUnary, ClipWithOptionalBounds) {
  const Tensor x = floats({-3, -1, 0, 2, 5}, {5});
  Tensor both =
      OneNode("Clip", {In{x}, constant(Tensor::scalar(-1.5f)), constant(Tensor::scalar(2.5f))}).run0();
  expectClose(both, floats({-1.5f, -1, 0, 2, 2.5f}, {5}));
  Tensor only_max = OneNode("Clip", {In{x}, In{}, In{Tensor::scalar(1.0f)}}).run0();  // runtime max
  expectClose(only_max, floats({-3, -1, 0, 1, 1}, {5}));
  Tensor none = OneNode("Clip", {In{x}}).run0();
  expectClose(none, x);
  Tensor ints = OneNode("Clip", {In{int64s({-9, 4, 9}, {3})}, constant(Tensor::scalar<int64_t>(0)),
                                 constant(Tensor::scalar<int64_t>(5))})
                    .run0();
  EXPECT_EQ(ints.toInt64Vector(), (std::vector<int64_t>{0, 4, 5}));
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("Clip", {In{x}, constant(floats({0, 1}, {2}))}).infer();
      },
      "min must be a scalar");
}

// ---------------------------------------------------------------- broadcasting arithmetic

using BinRef = std::function<double(double, double)>;

// Runs op(a, b) and compares with a reference that broadcasts by explicit index arithmetic.
void checkBinary(const std::string& op, const Tensor& a, const Tensor& b, const BinRef& ref) {
  SCOPED_TRACE(op + " " + shapeStr(a.shape()) + " x " + shapeStr(b.shape()));
  Tensor y = OneNode(op, {In{a}, In{b}}).run0();
  const Shape out = broadcastShapes(a.shape(), b.shape());
  ASSERT_EQ(y.shape(), out);
  Tensor expected(DType::Float32, out);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double av = a.doubleAt(ewtest::broadcastIndex(out, a.shape(), i));
    const double bv = b.doubleAt(ewtest::broadcastIndex(out, b.shape(), i));
    expected.data<float>()[i] = static_cast<float>(ref(av, bv));
  }
  expectClose(y, expected);
}

TEST(OpsElementwiseBinary, BroadcastPatterns) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {2, 3, 4}},        // same shape
      {{2, 3, 4}, {}},               // scalar
      {{}, {2, 3, 4}},               // scalar on the left
      {{1, 3, 4, 5}, {1, 3, 1, 1}},  // per-channel
      {{2, 3, 4, 5}, {3, 1, 1}},     // per-channel, lower rank
      {{4, 1}, {1, 5}},              // outer product: both broadcast
      {{2, 1, 4}, {3, 1}},           // interleaved broadcast dims
      {{5}, {2, 3, 5}},              // row vector on the left
      {{2, 3, 1, 5}, {2, 1, 4, 1}},  // alternating
      {{0, 3}, {1, 3}},              // empty
  };
  uint32_t seed = 1;
  for (auto& [sa, sb] : cases) {
    const Tensor a = randomFloats(sa, -4, 4, seed++);
    const Tensor b = randomFloats(sb, 0.5f, 4, seed++);
    checkBinary("Add", a, b, [](double x, double y) { return x + y; });
    checkBinary("Sub", a, b, [](double x, double y) { return x - y; });
    checkBinary("Mul", a, b, [](double x, double y) { return x * y; });
    checkBinary("Div", a, b, [](double x, double y) { return x / y; });
    checkBinary("Pow", b, a, [](double x, double y) { return std::pow(x, y); });
  }
}

TEST(OpsElementwiseBinary, IntegerDivTruncatesAndModFollowsFmod) {
  const Tensor a = int64s({-7, 7, -7, 7, 5}, {5});
  const Tensor b = int64s({2, -2, -2, 2, 0}, {5});
  EXPECT_EQ(OneNode("Div", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{-3, -3, 3, 3, 0}));
  EXPECT_EQ(OneNode("Mod", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{1, -1, -1, 1, 0}));
  OneNode fmod("Mod", {In{a}, In{b}});
  fmod.attr("fmod", int64_t{1});
  EXPECT_EQ(fmod.run0().toInt64Vector(), (std::vector<int64_t>{-1, 1, -1, 1, 0}));
  OneNode ffmod("Mod", {In{floats({-7.5f, 7.5f}, {2})}, In{floats({2.0f, -2.0f}, {2})}});
  ffmod.attr("fmod", int64_t{1});
  expectClose(ffmod.run0(), floats({-1.5f, 1.5f}, {2}));
  Tensor i32 =
      OneNode("Add", {In{Tensor::fromVector<int32_t>({1, 2, 3})}, In{Tensor::scalar<int32_t>(10)}}).run0();
  EXPECT_EQ(i32.toInt64Vector(), (std::vector<int64_t>{11, 12, 13}));
}

TEST(OpsElementwiseBinary, SmallIntegerTypesAndBitShift) {
  const Tensor a = Tensor::fromVector<uint8_t>({200, 7, 255});
  const Tensor b = Tensor::fromVector<uint8_t>({100, 2, 1});
  EXPECT_EQ(OneNode("Add", {In{a}, In{b}}).run0().toInt64Vector(),
            (std::vector<int64_t>{44, 9, 0}));  // wraps
  EXPECT_EQ(OneNode("Div", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{2, 3, 255}));
  EXPECT_EQ(OneNode("Mod", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 1, 0}));
  const Tensor i8 = Tensor::fromVector<int8_t>({-7, 7});
  EXPECT_EQ(OneNode("Mod", {In{i8}, In{Tensor::scalar<int8_t>(-3)}}).run0().toInt64Vector(),
            (std::vector<int64_t>{-1, -2}));
  OneNode left("BitShift",
               {In{Tensor::fromVector<uint32_t>({1, 3, 5})}, In{Tensor::fromVector<uint32_t>({4, 1, 40})}});
  left.attr("direction", std::string("LEFT"));
  EXPECT_EQ(left.run0().toInt64Vector(), (std::vector<int64_t>{16, 6, 0}));
  OneNode right("BitShift", {In{Tensor::fromVector<uint64_t>({256, 7})}, In{Tensor::scalar<uint64_t>(2)}});
  right.attr("direction", std::string("RIGHT"));
  EXPECT_EQ(right.run0().toInt64Vector(), (std::vector<int64_t>{64, 1}));
}

TEST(OpsElementwiseBinary, PowExponentTypesAndConstantFastPaths) {
  const Tensor x = randomFloats({3, 4}, 0.1f, 3.0f, 11);
  for (float e : {2.0f, 3.0f, 0.5f, -1.0f, 1.0f, 1.7f}) {
    SCOPED_TRACE(e);
    Tensor y = OneNode("Pow", {In{x}, constant(Tensor::scalar(e))}).run0();
    Tensor want(DType::Float32, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) want.data<float>()[i] = std::pow(x.data<float>()[i], e);
    expectClose(y, want);
  }
  Tensor yi = OneNode("Pow", {In{floats({2, -3, 0.5f}, {3})}, In{int64s({3, 2, -1}, {3})}}).run0();
  expectClose(yi, floats({8, 9, 2}, {3}));
  Tensor ii = OneNode("Pow", {In{int64s({2, 3}, {2})}, In{int64s({10, 3}, {2})}}).run0();
  EXPECT_EQ(ii.toInt64Vector(), (std::vector<int64_t>{1024, 27}));
}

TEST(OpsElementwiseBinary, VariadicSumMeanMaxMin) {
  const Tensor a = randomFloats({2, 3}, -2, 2, 21);
  const Tensor b = randomFloats({3}, -2, 2, 22);
  const Tensor c = randomFloats({2, 1}, -2, 2, 23);
  const Shape out = {2, 3};
  auto at = [&](const Tensor& t, int64_t i) {
    return t.data<float>()[ewtest::broadcastIndex(out, t.shape(), i)];
  };
  Tensor sum = OneNode("Sum", {In{a}, In{b}, In{c}}).run0();
  Tensor mean = OneNode("Mean", {In{a}, In{b}, In{c}}).run0();
  Tensor mx = OneNode("Max", {In{a}, In{b}, In{c}}).run0();
  Tensor mn = OneNode("Min", {In{c}, In{b}, In{a}}).run0();
  ASSERT_EQ(sum.shape(), out);
  for (int64_t i = 0; i < 6; ++i) {
    const float s = at(a, i) + at(b, i) + at(c, i);
    EXPECT_NEAR(sum.data<float>()[i], s, 1e-6);
    EXPECT_NEAR(mean.data<float>()[i], s / 3, 1e-6);
    EXPECT_EQ(mx.data<float>()[i], std::max({at(a, i), at(b, i), at(c, i)}));
    EXPECT_EQ(mn.data<float>()[i], std::min({at(a, i), at(b, i), at(c, i)}));
  }
  // One input: a copy. Int64 works for shape arithmetic.
  expectClose(OneNode("Sum", {In{a}}).run0(), a);
  EXPECT_EQ(OneNode("Max", {In{int64s({1, 9}, {2})}, In{Tensor::scalar<int64_t>(4)}}).run0().toInt64Vector(),
            (std::vector<int64_t>{4, 9}));
}

TEST(OpsElementwiseBinary, PReluPerChannelSlope) {
  const Tensor x = randomFloats({2, 3, 2, 2}, -2, 2, 31);
  const Tensor slope = floats({0.1f, 0.2f, 0.3f}, {3, 1, 1});
  checkBinary("PRelu", x, slope, [](double v, double s) { return v >= 0 ? v : s * v; });
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("PRelu", {In{floats({1}, {1})}, In{slope}}).infer();
      },
      "does not broadcast to X");
}

TEST(OpsElementwiseBinary, ShapeAndDTypeErrorsNameTheProblem) {
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Add", {In{Tensor(DType::Float32, {2, 3})}, In{Tensor(DType::Float32, {4})}}).infer();
      },
      "[2,3] and [4] cannot be broadcast");
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Mul", {In{Tensor(DType::Float32, {2})}, In{Tensor(DType::Int64, {2})}}).infer();
      },
      "input 1 has dtype int64 but input 0 has float32");
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Add", {In{Tensor(DType::Float32, {2})}, In{Tensor(DType::Float32, {3})}}).infer();
      },
      "node 'node_under_test' (Add)");
}

// ---------------------------------------------------------------- comparisons and logic

TEST(OpsElementwiseLogic, ComparisonsBroadcastToBool) {
  const Tensor a = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = floats({2, 2, 5}, {3});
  auto bools = [](const Tensor& t) { return t.toInt64Vector(); };
  Tensor eq = OneNode("Equal", {In{a}, In{b}}).run0();
  ASSERT_EQ(eq.dtype(), DType::Bool);
  EXPECT_EQ(bools(eq), (std::vector<int64_t>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(bools(OneNode("Greater", {In{a}, In{b}}).run0()), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(bools(OneNode("GreaterOrEqual", {In{a}, In{b}}).run0()),
            (std::vector<int64_t>{0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(bools(OneNode("Less", {In{a}, In{b}}).run0()), (std::vector<int64_t>{1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(bools(OneNode("LessOrEqual", {In{a}, In{b}}).run0()), (std::vector<int64_t>{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(bools(OneNode("Equal", {In{int64s({3, 4}, {2})}, In{Tensor::scalar<int64_t>(4)}}).run0()),
            (std::vector<int64_t>{0, 1}));
}

TEST(OpsElementwiseLogic, BooleanOps) {
  const Tensor a = Tensor::fromVector<bool>({false, false, true, true});
  const Tensor b = Tensor::fromVector<bool>({false, true, false, true});
  EXPECT_EQ(OneNode("And", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(OneNode("Or", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(OneNode("Xor", {In{a}, In{b}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(OneNode("Not", {In{a}}).run0().toInt64Vector(), (std::vector<int64_t>{1, 1, 0, 0}));
  // Broadcast a [2,1] column against b reshaped to [1,4].
  Tensor col = Tensor::fromVector<bool>({true, false}, {2, 1});
  Tensor row = b.reshaped({1, 4});
  EXPECT_EQ(OneNode("And", {In{col}, In{row}}).run0().toInt64Vector(),
            (std::vector<int64_t>{0, 1, 0, 1, 0, 0, 0, 0}));
}

TEST(OpsElementwiseLogic, WhereBroadcastsAllThreeInputs) {
  const Tensor cond = Tensor::fromVector<bool>({true, false, true}, {1, 3});
  const Tensor x = randomFloats({2, 1}, -1, 1, 41);
  const Tensor y = randomFloats({2, 3}, -1, 1, 42);
  Tensor out = OneNode("Where", {In{cond}, In{x}, In{y}}).run0();
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) {
    const bool c = cond.data<bool>()[i % 3];
    EXPECT_EQ(out.data<float>()[i], c ? x.data<float>()[i / 3] : y.data<float>()[i]) << i;
  }
  Tensor ints = OneNode("Where", {In{Tensor::fromVector<bool>({true, false})}, In{int64s({1, 2}, {2})},
                                  In{Tensor::scalar<int64_t>(-1)}})
                    .run0();
  EXPECT_EQ(ints.toInt64Vector(), (std::vector<int64_t>{1, -1}));
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("Where", {In{x}, In{x}, In{y}}).infer();
      },
      "condition must be bool");
}

TEST(OpsElementwiseLogic, IsNaNIsInf) {
  const Tensor x = floats({1.0f, kNaN, kInf, -kInf}, {4});
  EXPECT_EQ(OneNode("IsNaN", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(OneNode("IsInf", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{0, 0, 1, 1}));
  OneNode neg("IsInf", {In{x}});
  neg.attr("detect_positive", int64_t{0});
  EXPECT_EQ(neg.run0().toInt64Vector(), (std::vector<int64_t>{0, 0, 0, 1}));
}

// ---------------------------------------------------------------- Cast

Tensor cast(const Tensor& x, DType to) {
  OneNode n("Cast", {In{x}});
  n.attr("to", static_cast<int64_t>(to));
  return n.run0();
}

TEST(OpsElementwiseCast, FloatToIntTruncatesTowardZeroAndSaturates) {
  const Tensor x = floats({-2.7f, -0.5f, 0.5f, 2.7f, 3e9f, -3e9f, kNaN}, {7});
  Tensor i32 = cast(x, DType::Int32);
  ASSERT_EQ(i32.dtype(), DType::Int32);
  EXPECT_EQ(i32.toInt64Vector(), (std::vector<int64_t>{-2, 0, 0, 2, std::numeric_limits<int32_t>::max(),
                                                       std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(cast(floats({-3.0f, 255.9f, 300.0f}, {3}), DType::UInt8).toInt64Vector(),
            (std::vector<int64_t>{0, 255, 255}));
  EXPECT_EQ(cast(floats({0.0f, -0.1f, kNaN}, {3}), DType::Bool).toInt64Vector(),
            (std::vector<int64_t>{0, 1, 1}));
}

TEST(OpsElementwiseCast, IntegerAndBoolConversions) {
  Tensor wrapped = cast(int64s({int64_t{1} << 32 | 5, -1}, {2}), DType::Int32);
  EXPECT_EQ(wrapped.toInt64Vector(), (std::vector<int64_t>{5, -1}));
  Tensor u8 = cast(int64s({-1, 256}, {2}), DType::UInt8);
  EXPECT_EQ(u8.toInt64Vector(), (std::vector<int64_t>{255, 0}));
  Tensor f = cast(Tensor::fromVector<bool>({true, false}), DType::Float32);
  expectClose(f, floats({1, 0}, {2}));
  Tensor d = cast(floats({0.1f}, {1}), DType::Float64);
  EXPECT_EQ(d.data<double>()[0], static_cast<double>(0.1f));
}

TEST(OpsElementwiseCast, Float16RoundTripsThroughIeeeHalf) {
  const Tensor x = floats({1.0f / 3.0f, 65504.0f, 70000.0f, -2.5f, 1e-8f}, {5});
  Tensor h = cast(x, DType::Float16);
  ASSERT_EQ(h.dtype(), DType::Float16);
  const uint16_t* bits = static_cast<const uint16_t*>(h.raw());
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(bits[i], floatToHalf(x.data<float>()[i])) << i;
  Tensor back = cast(h, DType::Float32);
  EXPECT_FLOAT_EQ(back.data<float>()[0], 0.333251953125f);  // nearest half to 1/3
  EXPECT_EQ(back.data<float>()[1], 65504.0f);
  EXPECT_EQ(back.data<float>()[2], kInf);  // beyond the half range
  EXPECT_EQ(back.data<float>()[3], -2.5f);
  Tensor hi = cast(h, DType::Int64);
  EXPECT_EQ(hi.toInt64Vector()[3], -2);
}

TEST(OpsElementwiseCast, CastLikeTakesTheSecondInputsDType) {
  OneNode n("CastLike", {In{floats({-1.9f, 2.5f}, {2})}, In{Tensor(DType::Int64, {7})}});
  Tensor y = n.run0();
  EXPECT_EQ(y.dtype(), DType::Int64);
  EXPECT_EQ(y.toInt64Vector(), (std::vector<int64_t>{-1, 2}));
}

TEST(OpsElementwiseCast, EveryStorablePairRuns) {
  const std::vector<DType> all = {DType::Float32, DType::UInt8,   DType::Int8,   DType::UInt16,
                                  DType::Int16,   DType::Int32,   DType::Int64,  DType::Bool,
                                  DType::Float16, DType::Float64, DType::UInt32, DType::UInt64};
  const Tensor seed = floats({0, 1, 2, 100}, {4});
  for (DType from : all) {
    const Tensor x = cast(seed, from);
    for (DType to : all) {
      SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + dtypeName(to));
      Tensor y = cast(x, to);
      ASSERT_EQ(y.dtype(), to);
      const double big = to == DType::Bool || from == DType::Bool ? 1 : 100;
      EXPECT_EQ(y.doubleAt(0), 0);
      EXPECT_EQ(y.doubleAt(1), 1);
      EXPECT_EQ(y.doubleAt(3), big);
    }
  }
}

}  // namespace
}  // namespace npuc
