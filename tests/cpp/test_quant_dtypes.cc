// The #17 dtypes (w8a16, w16a16i, w16a16i_dfp, w4a16 groupN): the wide requantization against an
// exact rational reference, the quantizer's rules (16-bit activation parameters, power-of-two
// scales, group multipliers, int64 biases), reference vs fast wide kernels to the bit on random
// and extreme data, whole graphs per dtype, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "opset/eval.h"
#include "pass_test_util.h"
#include "quant/binary_requant_wide.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/requant_wide.h"
#include "quant/scheme_qparams.h"
#include "quant/scheme_weights.h"
#include "quant/sim/quantized_executor.h"
#include "quant/sim/wide_mac.h"
#include "quant_test_util.h"

namespace npuc::quant {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;
using passtest::randomTensor;

// Exact acc * m / 2^r as a rational, rounded half away from zero by comparing the remainder with
// half the divisor, then + zero point, saturated to int16. r can reach 95: the divisor is kept as
// a shift count and the comparison is done on 128-bit values.
int16_t referenceRequant16(int64_t acc, FixedPointMultiplier fm, int32_t zp) {
  __int128 q = 0;
  if (fm.multiplier != 0) {
    const __int128 num = static_cast<__int128>(acc) * fm.multiplier;
    const int r = 31 - fm.shift;
    const __int128 mag = num < 0 ? -num : num;
    __int128 whole = mag >> r;
    const __int128 rem = mag - (whole << r);
    if (2 * rem >= (static_cast<__int128>(1) << r)) whole += 1;
    q = num < 0 ? -whole : whole;
  }
  q += zp;
  return static_cast<int16_t>(q < -32768 ? -32768 : (q > 32767 ? 32767 : static_cast<int32_t>(q)));
}

TEST(QuantDTypes, WideRequantMatchesExactRationalReference) {
  std::mt19937_64 gen(17);
  std::uniform_int_distribution<int64_t> any(std::numeric_limits<int64_t>::min(),
                                             std::numeric_limits<int64_t>::max());
  std::uniform_int_distribution<int64_t> mid(-(int64_t{1} << 40), int64_t{1} << 40);
  std::uniform_real_distribution<double> exponent(-60.0, 10.0);
  std::uniform_int_distribution<int32_t> zp(-32768, 32767);
  for (int trial = 0; trial < 200000; ++trial) {
    const FixedPointMultiplier m = quantizeWideMultiplier(std::exp2(exponent(gen)));
    const int64_t acc = trial % 4 == 0 ? any(gen) : mid(gen);
    const int32_t z = zp(gen);
    ASSERT_EQ(requantizeToInt16(acc, m, z), referenceRequant16(acc, m, z))
        << "acc " << acc << " m " << m.multiplier << " shift " << m.shift << " zp " << z;
  }
  // Ties round away from zero on both sides: 3 * 0.5 = 1.5 -> 2, -1.5 -> -2.
  const FixedPointMultiplier half = quantizeWideMultiplier(0.5);
  EXPECT_EQ(requantizeToInt16(3, half, 0), 2);
  EXPECT_EQ(requantizeToInt16(-3, half, 0), -2);
  // An accumulator far beyond int32 with a tiny multiplier: int8's encoding would call M zero.
  const FixedPointMultiplier tiny = quantizeWideMultiplier(1e-12);
  EXPECT_FALSE(tiny.isZero());
  EXPECT_TRUE(quantizeMultiplier(1e-12).isZero());
  EXPECT_EQ(requantizeToInt16(int64_t{5} << 40, tiny, 0), referenceRequant16(int64_t{5} << 40, tiny, 0));
  EXPECT_EQ(requantizeToInt16(int64_t{5} << 40, tiny, 0), 5);  // 5.497558... rounds to 5
  EXPECT_EQ(requantizeToInt16(std::numeric_limits<int64_t>::max(), half, 100), 32767);
  EXPECT_EQ(requantizeToInt16(std::numeric_limits<int64_t>::min(), half, -100), -32768);
  EXPECT_THROW(quantizeWideMultiplier(0.0), ConfigError);
}

// Add / Mul / rescale on int16 against the exact real result, rounded once.
TEST(QuantDTypes, ElementwiseInt16RoundsOnce) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> scale(1e-5f, 1e-1f);
  std::uniform_int_distribution<int> q(-32768, 32767);
  for (int trial = 0; trial < 20000; ++trial) {
    const QuantParams a{scale(gen), q(gen)}, b{scale(gen), q(gen)}, y{scale(gen) * 4, q(gen)};
    const int16_t qa = static_cast<int16_t>(q(gen)), qb = static_cast<int16_t>(q(gen));
    const double exact_add =
        (double{a.scale} * (qa - a.zero_point) + double{b.scale} * (qb - b.zero_point)) / y.scale;
    const int16_t got = addInt16(qa, qb, makeWideAddRequant(a, b, y));
    const double want = std::clamp(std::round(exact_add) + y.zero_point, -32768.0, 32767.0);
    // The multipliers carry 31 bits: only a value within ~2^-14 of a rounding tie may land one off.
    if (std::abs(exact_add - std::trunc(exact_add)) - 0.5 > 1e-3 ||
        std::abs(exact_add - std::trunc(exact_add)) < 0.499)
      ASSERT_EQ(got, want) << trial;
    const double exact_mul =
        double{a.scale} * (qa - a.zero_point) * double{b.scale} * (qb - b.zero_point) / y.scale;
    const int16_t got_mul = mulInt16(qa, qb, makeWideMulRequant(a, b, y));
    if (std::abs(std::abs(exact_mul - std::trunc(exact_mul)) - 0.5) > 1e-3)
      ASSERT_EQ(got_mul, std::clamp(std::round(exact_mul) + y.zero_point, -32768.0, 32767.0)) << trial;
  }
  const QuantParams p{0.01f, 5};
  EXPECT_EQ(rescaleInt16(1234, makeWideRescale(p, p)), 1234);  // same grid: copied
  EXPECT_EQ(rescaleInt16(1005, makeWideRescale(p, QuantParams{0.02f, -7})), -7 + 500);
}

TEST(QuantDTypes, ActivationParamsAt16Bits) {
  const QuantScheme w8a16 = QuantScheme::of(SchemeDType::W8A16);
  const QuantParams p = chooseSchemeActivationParams(-1.0f, 3.0f, w8a16);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 65535.0f);
  EXPECT_EQ(p.zero_point, static_cast<int32_t>(std::round(-32768 + 1.0 / p.scale)));
  EXPECT_EQ(quantizeValueWide(0.0f, p, -32768, 32767), p.zero_point);  // 0 is exact
  // A range not containing 0 is widened to it, as at 8 bits.
  EXPECT_EQ(chooseSchemeActivationParams(2.0f, 5.0f, w8a16).zero_point, -32768);
  // w8a8 is unchanged.
  const QuantParams p8 = chooseSchemeActivationParams(-1.0f, 3.0f, QuantScheme{});
  const QuantParams ref8 = chooseActivationParams(-1.0f, 3.0f);
  EXPECT_EQ(p8.scale, ref8.scale);
  EXPECT_EQ(p8.zero_point, ref8.zero_point);

  // dfp: zero point 0 and the smallest power of two that keeps max(|lo|, |hi|) inside 32767 steps.
  const QuantScheme dfp = QuantScheme::of(SchemeDType::W16A16IDfp);
  for (float hi : {0.3f, 1.0f, 6.0f, 1000.0f, 32767.0f}) {
    const QuantParams d = chooseSchemeActivationParams(-hi / 3, hi, dfp);
    EXPECT_EQ(d.zero_point, 0);
    int e = 0;
    EXPECT_EQ(std::frexp(d.scale, &e), 0.5) << hi;
    EXPECT_LE(hi / d.scale, 32767.0) << hi;
    EXPECT_GT(hi / d.scale, 32767.0 / 2) << hi;
  }
  EXPECT_EQ(chooseSchemeActivationParams(-1.0f, 32767.0f, dfp).scale, 1.0f);  // exact power stays
}

TEST(QuantDTypes, WeightScalesPerScheme) {
  const Tensor w = randomTensor({4, 3, 3, 3}, 5, -0.8f, 0.8f);
  const WeightChannelLayout layout = convWeightLayout(w.shape(), "w");
  const QuantizedWeights w16 = quantizeSchemeWeights(w, layout, WeightGranularity::PerChannel,
                                                     QuantScheme::of(SchemeDType::W16A16I), "w");
  ASSERT_EQ(w16.values.dtype(), DType::Int16);
  int32_t peak = 0;
  for (int64_t i = 0; i < w16.values.numel(); ++i)
    peak = std::max(peak, std::abs(int32_t{w16.values.data<int16_t>()[i]}));
  EXPECT_EQ(peak, 32767);
  const QuantizedWeights dfp = quantizeSchemeWeights(w, layout, WeightGranularity::PerChannel,
                                                     QuantScheme::of(SchemeDType::W16A16IDfp), "w");
  for (float s : dfp.scales) {
    int e = 0;
    EXPECT_EQ(std::frexp(s, &e), 0.5) << s;
  }
  for (int64_t i = 0; i < dfp.values.numel(); ++i) EXPECT_LE(std::abs(dfp.values.data<int16_t>()[i]), 32767);
  const QuantizedWeights w8 = quantizeSchemeWeights(w, layout, WeightGranularity::PerTensor,
                                                    QuantScheme::of(SchemeDType::W8A16), "w");
  ASSERT_EQ(w8.values.dtype(), DType::Int8);
  EXPECT_EQ(w8.scales[0], w8.scales[3]);  // per tensor: one scale
  EXPECT_THROW(quantizeSchemeWeights(w, layout, WeightGranularity::PerChannel, QuantScheme{}, "w"),
               ConfigError);
}

TEST(QuantDTypes, GroupMultipliersBoundAndNothingClips) {
  // [K, N] MatMul weights with K = 300: groups of 128 -> 3 groups, the last 44 long. One group of
  // column 0 is tiny so its multiplier drops well below 255.
  Tensor w = randomTensor({300, 5}, 9, -1.0f, 1.0f);
  for (int64_t k = 128; k < 256; ++k) w.data<float>()[k * 5] *= 0.01f;
  const WeightChannelLayout layout = matmulWeightLayout(w.shape(), "w");
  const QuantizedWeights q = quantizeSchemeWeights(w, layout, WeightGranularity::PerChannel,
                                                   QuantScheme::of(SchemeDType::W4A16, 128), "w");
  ASSERT_EQ(q.group_size, 128);
  ASSERT_EQ(q.group_multipliers.size(), 5u * 3u);
  for (int32_t m : q.group_multipliers) {
    EXPECT_GE(m, 1);
    EXPECT_LE(m, 255);
  }
  EXPECT_LE(q.group_multipliers[1], 4);  // column 0, group 1: max|w| about 1% of the channel's
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t c = i % 5, k = i / 5;
    const int32_t v = q.values.data<int8_t>()[i];
    ASSERT_LE(std::abs(v), 7);
    const double step =
        double{q.scales[static_cast<size_t>(c)]} * q.group_multipliers[static_cast<size_t>(c * 3 + k / 128)];
    // Nothing clips: every weight is within half a step of its grid value.
    EXPECT_LE(std::abs(w.data<float>()[i] - step * v), step * 0.5 * (1 + 1e-6)) << i;
  }
  // A reduction shorter than the group is one group.
  const Tensor short_w = randomTensor({6, 20}, 3);
  const QuantizedWeights one =
      quantizeSchemeWeights(short_w, gemmWeightLayout(short_w.shape(), true, "s"),
                            WeightGranularity::PerChannel, QuantScheme::of(SchemeDType::W4A16, 32), "s");
  ASSERT_EQ(one.group_multipliers.size(), 6u);
  for (int32_t m : one.group_multipliers) EXPECT_EQ(m, 255);  // the group is the channel
}

std::unique_ptr<Graph> convGemmGraph() {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 10, 10});
  Value* c1 = b.op("Conv", {x, b.randomConstant({8, 3, 3, 3}, 1, -0.5f, 0.5f), b.randomConstant({8}, 2)},
                   attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* r1 = b.op("Relu", {c1});
  Value* dw = b.op("Conv", {r1, b.randomConstant({8, 1, 3, 3}, 3, -0.5f, 0.5f), b.randomConstant({8}, 4)},
                   attrs({{"group", int64_t{8}},
                          {"strides", std::vector<int64_t>{2, 2}},
                          {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* add = b.op("Add", {dw, b.op("MaxPool", {r1},
                                     attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                                            {"strides", std::vector<int64_t>{2, 2}}}))});
  Value* flat = b.op("Flatten", {add});
  b.output(b.op("Gemm", {flat, b.randomConstant({10, 200}, 5, -0.1f, 0.1f), b.randomConstant({10}, 6)},
                attrs({{"transB", int64_t{1}}})));
  return b.release();
}

double cosine(const Tensor& a, const Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    ab += double{a.data<float>()[i]} * b.data<float>()[i];
    aa += double{a.data<float>()[i]} * a.data<float>()[i];
    bb += double{b.data<float>()[i]} * b.data<float>()[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(QuantDTypes, WholeGraphPerDTypeReferenceEqualsFastAndTracksFloat) {
  const std::unique_ptr<Graph> g = convGemmGraph();
  Calibrator cal(*g);
  std::vector<Tensor> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back(randomTensor({1, 3, 10, 10}, 100 + s, -2.0f, 2.0f));
  for (const Tensor& s : samples) cal.addSample({s});
  const Tensor golden = evalGraph(*g, {{"x", samples[1]}})[0];
  struct Case {
    QuantScheme scheme;
    double min_cosine;
  };
  // Floors under the cosines measured on this graph (printed): w8a8 0.99997, w8a16 0.999993,
  // w16a16i and dfp 1.0000000 to 7 digits, w4a16 group32 0.996.
  const Case cases[] = {{QuantScheme{}, 0.9999},
                        {QuantScheme::of(SchemeDType::W8A16), 0.99995},
                        {QuantScheme::of(SchemeDType::W16A16I), 0.99999},
                        {QuantScheme::of(SchemeDType::W16A16IDfp), 0.99999},
                        {QuantScheme::of(SchemeDType::W4A16, 32), 0.99}};
  for (const Case& c : cases) {
    QuantizerOptions opts;
    opts.scheme = c.scheme;
    const QuantPlan plan = buildQuantPlan(*g, cal.ranges({}), opts);
    EXPECT_EQ(plan.scheme, c.scheme);
    const QuantizedExecutor ref(*g, plan, SimOptions{SimMode::Int8, SimPath::Reference});
    const QuantizedExecutor fast(*g, plan, SimOptions{SimMode::Int8, SimPath::Fast});
    const Tensor a = ref.run({samples[1]})[0], b = fast.run({samples[1]})[0];
    ASSERT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes())) << describeScheme(c.scheme);
    const double cos = cosine(golden, b);
    std::printf("%s: cosine %.7f\n", describeScheme(c.scheme).c_str(), cos);
    EXPECT_GE(cos, c.min_cosine) << describeScheme(c.scheme) << "\n" << fast.describe();
    if (c.scheme.activation_bits == 16) {
      EXPECT_EQ(fast.simDType(*g->outputs()[0]), DType::Int16);
      EXPECT_EQ(plan.at("x").dtype, QuantDType::Int16);
      const Node* conv = *g->nodes().begin();
      EXPECT_EQ(plan.at(conv->input(2)->name()).dtype, QuantDType::Int64);
      const QuantDType wd = plan.at(conv->input(1)->name()).dtype;
      EXPECT_EQ(wd, c.scheme.weight_bits == 4
                        ? QuantDType::Int4
                        : (c.scheme.weight_bits == 16 ? QuantDType::Int16 : QuantDType::Int8));
      // Integer at 16 bits: MAC ops, Add, MaxPool, Relu (quant/graph/scheme_kernels.h).
      for (const Node* n : g->nodes())
        EXPECT_EQ(plan.precisionOf(n->name()), NodePrecision::Int8) << n->name();
      EXPECT_NE(fast.describe().find("Add -> int16 add"), std::string::npos) << fast.describe();
    }
  }
}

// ---- wide kernels: reference vs fast on random geometries, extremes included

std::vector<int16_t> randomInt16(size_t n, std::mt19937& gen, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int16_t> v(n);
  for (auto& x : v) x = static_cast<int16_t>(d(gen));
  return v;
}

std::vector<FixedPointMultiplier> randomWideMultipliers(size_t n, std::mt19937& gen, double lo_exp,
                                                        double hi_exp) {
  std::uniform_real_distribution<double> e(lo_exp, hi_exp);
  std::vector<FixedPointMultiplier> m;
  for (size_t i = 0; i < n; ++i) m.push_back(quantizeWideMultiplier(std::exp2(e(gen))));
  return m;
}

TEST(QuantDTypes, WideConvReferenceEqualsFast) {
  std::mt19937 gen(3);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  int checked = 0;
  int64_t widest = 0;  // the largest |accumulator| seen, to show the data reaches past int32
  for (int trial = 0; trial < 60; ++trial) {
    const bool extreme = trial % 3 == 0;
    const int weight_bits = trial % 3 == 0 ? 16 : (trial % 3 == 1 ? 8 : 4);
    WideConvParams p;
    ConvGeometry& g = p.geometry;
    g.groups = trial % 4 == 0 ? pick(2, 4) : 1;
    const bool depthwise = trial % 5 == 0;
    g.in_channels = depthwise ? pick(2, 6) : g.groups * pick(1, 5);
    if (depthwise) g.groups = g.in_channels;
    g.out_channels = g.groups * pick(1, 4);
    g.in_h = pick(3, 11);
    g.in_w = pick(3, 11);
    g.kernel_h = pick(1, 3);
    g.kernel_w = pick(1, 3);
    g.stride_h = pick(1, 2);
    g.stride_w = pick(1, 2);
    g.dilation_h = pick(1, 2);
    g.dilation_w = pick(1, 2);
    g.pad_top = pick(0, 2);
    g.pad_left = pick(0, 2);
    g.batch = pick(1, 2);
    const int64_t eff_h = (g.kernel_h - 1) * g.dilation_h + 1, eff_w = (g.kernel_w - 1) * g.dilation_w + 1;
    g.out_h = (g.in_h + 2 * g.pad_top - eff_h) / g.stride_h + 1;
    g.out_w = (g.in_w + 2 * g.pad_left - eff_w) / g.stride_w + 1;
    if (g.out_h < 1 || g.out_w < 1) continue;
    const int wmax = (1 << (weight_bits - 1)) - 1;
    const int64_t k = g.reduction();
    p.weights =
        extreme ? std::vector<int16_t>(static_cast<size_t>(g.out_channels * k), static_cast<int16_t>(-wmax))
                : randomInt16(static_cast<size_t>(g.out_channels * k), gen, -wmax, wmax);
    std::uniform_int_distribution<int64_t> bias(-(int64_t{1} << 45), int64_t{1} << 45);
    for (int64_t c = 0; c < g.out_channels; ++c) p.bias.push_back(bias(gen));
    if (weight_bits == 4) {
      p.groups.size = pick(1, 3) * 4;
      const int64_t per = p.groups.groupsPer(k);
      for (int64_t i = 0; i < g.out_channels * per; ++i) p.groups.multipliers.push_back(pick(1, 255));
    }
    p.input_zero_point = extreme ? 32767 : pick(-32768, 32767);
    p.output_zero_point = pick(-32768, 32767);
    p.multipliers = randomWideMultipliers(static_cast<size_t>(g.out_channels), gen, -40, -10);
    validateWideConv(p, "test");
    const std::vector<int16_t> x =
        extreme
            ? std::vector<int16_t>(static_cast<size_t>(g.batch * g.in_channels * g.in_h * g.in_w), -32768)
            : randomInt16(static_cast<size_t>(g.batch * g.in_channels * g.in_h * g.in_w), gen, -32768, 32767);
    std::vector<int16_t> ref(static_cast<size_t>(g.batch * g.out_channels * g.out_h * g.out_w)),
        fast(ref.size());
    wideConvReference(p, x.data(), ref.data());
    wideConvFast(p, x.data(), fast.data());
    ASSERT_EQ(ref, fast) << "trial " << trial;
    ++checked;
    for (int64_t b : p.bias) widest = std::max(widest, b < 0 ? -b : b);
  }
  EXPECT_GE(checked, 40);
  EXPECT_GT(widest, int64_t{1} << 31);
}

TEST(QuantDTypes, WideLinearAndBatchMatMulReferenceEqualFast) {
  std::mt19937 gen(5);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int trial = 0; trial < 40; ++trial) {
    WideLinearParams p;
    p.rows = pick(1, 6);
    p.depth = pick(1, 300);
    p.columns = pick(1, 9);
    const int wmax = trial % 2 ? 32767 : 7;
    p.weights = randomInt16(static_cast<size_t>(p.columns * p.depth), gen, -wmax, wmax);
    if (trial % 2 == 0) {
      p.groups.size = 32 << (trial % 8 / 2);
      for (int64_t i = 0; i < p.columns * p.groups.groupsPer(p.depth); ++i)
        p.groups.multipliers.push_back(pick(1, 255));
    }
    p.bias.assign(static_cast<size_t>(p.columns), int64_t{3} << 33);
    p.input_zero_point = trial % 4 == 1 ? -32768 : pick(-32768, 32767);
    p.output_zero_point = pick(-32768, 32767);
    p.multipliers = randomWideMultipliers(static_cast<size_t>(p.columns), gen, -45, -15);
    validateWideLinear(p, "test");
    const std::vector<int16_t> x = randomInt16(static_cast<size_t>(p.rows * p.depth), gen, -32768, 32767);
    std::vector<int16_t> ref(static_cast<size_t>(p.rows * p.columns)), fast(ref.size());
    wideLinearReference(p, x.data(), ref.data());
    wideLinearFast(p, x.data(), fast.data());
    ASSERT_EQ(ref, fast) << "linear trial " << trial;

    WideBatchMatMulParams b;
    b.batch = pick(1, 3);
    b.m = pick(1, 7);
    b.k = pick(1, 150);
    b.n = pick(1, 7);
    b.zero_point_a = pick(-32768, 32767);
    b.zero_point_b = trial % 3 ? pick(-32768, 32767) : 32767;
    b.output_zero_point = pick(-32768, 32767);
    b.multiplier = randomWideMultipliers(1, gen, -45, -20)[0];
    const std::vector<int16_t> a = randomInt16(static_cast<size_t>(b.batch * b.m * b.k), gen, -32768, 32767);
    const std::vector<int16_t> bb = randomInt16(static_cast<size_t>(b.batch * b.k * b.n), gen, -32768, 32767);
    std::vector<int16_t> yr(static_cast<size_t>(b.batch * b.m * b.n)), yf(yr.size());
    wideBatchMatMulReference(b, a.data(), bb.data(), yr.data());
    wideBatchMatMulFast(b, a.data(), bb.data(), yf.data());
    ASSERT_EQ(yr, yf) << "batch matmul trial " << trial;
  }
}

TEST(QuantDTypes, RefusesInconsistentSchemes) {
  try {
    QuantScheme::of(SchemeDType::W4A16, 0);
    FAIL() << "w4a16 without a group";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("w4a16"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("group128"), std::string::npos);
  }
  try {
    QuantScheme::of(SchemeDType::W8A16, 128);
    FAIL() << "group with w8a16";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("group128"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("w8a16"), std::string::npos);
  }
  WideLinearParams bad;
  bad.columns = 2;
  bad.depth = 3;
  EXPECT_THROW(validateWideLinear(bad, "node 'fc'"), ConfigError);
}

}  // namespace
}  // namespace npuc::quant

namespace npuc::quant {
namespace {

// Real graphs: ppocr_cls (real weights: depthwise, SE blocks, HardSwish) and tiny_vit (attention
// MatMul of two activations, Gemm/MatMul weights) simulate to the bit on both paths per dtype.
TEST(QuantDTypes, SharedModelsReferenceEqualsFast) {
  size_t ran = 0;
  for (const char* file : {"ppocr_cls.onnx", "tiny_vit.onnx"}) {
    const std::unique_ptr<Graph> g = testing::optimizedSharedModel(file);
    if (!g) continue;
    Calibrator cal(*g);
    const std::vector<Tensor> x = testing::randomNormalInputs(*g, 1);
    cal.addSample(x);
    for (const QuantScheme& s :
         {QuantScheme::of(SchemeDType::W16A16IDfp), QuantScheme::of(SchemeDType::W4A16, 64)}) {
      QuantizerOptions opts;
      opts.scheme = s;
      const QuantPlan plan = buildQuantPlan(*g, cal.ranges({}), opts);
      const Tensor a = QuantizedExecutor(*g, plan, SimOptions{SimMode::Int8, SimPath::Reference}).run(x)[0];
      const Tensor b = QuantizedExecutor(*g, plan, SimOptions{SimMode::Int8, SimPath::Fast}).run(x)[0];
      ASSERT_EQ(a.nbytes(), b.nbytes());
      EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes())) << file << " " << describeScheme(s);
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "shared models not found (NPUC_SHARED_MODELS)";
}

}  // namespace
}  // namespace npuc::quant
