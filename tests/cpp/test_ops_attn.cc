// The attention-helper / signal / small numeric op family (opset/ops/attn_*.cpp) and its two
// passes: Einsum against a naive reference over many equation forms, Trilu, Det, MVN, LRN, the
// windows, MelWeightMatrix, DFT/STFT, the random ops' statistics, the shape errors (each names
// node, op and shape), lower_einsum / lower_trilu differentially, and the INT8 simulator's
// reference and fast paths agreeing to the bit on a graph holding the ops.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <map>

#include "ew_test_util.h"
#include "opset/eval.h"
#include "pass_test_util.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/sim/quantized_executor.h"

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
using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

Tensor i64(int64_t v) {
  return Tensor::scalar<int64_t>(v);
}

// ---------------------------------------------------------------- Einsum

// Naive reference for "<a>,<b>-><out>" with single-letter labels, no ellipsis.
Tensor naiveEinsum2(const std::string& a, const std::string& b, const std::string& out, const Tensor& x,
                    const Tensor& y) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < a.size(); ++i) size[a[i]] = x.shape()[i];
  for (size_t i = 0; i < b.size(); ++i) size[b[i]] = y.shape()[i];
  std::string labels;
  for (auto& [c, s] : size) labels += c;
  Shape os;
  for (char c : out) os.push_back(size[c]);
  Tensor r(DType::Float32, os);
  std::vector<double> acc(static_cast<size_t>(r.numel()), 0.0);
  std::map<char, int64_t> idx;
  for (char c : labels) idx[c] = 0;
  auto flat = [&](const std::string& term, const Shape& s) {
    int64_t f = 0;
    for (size_t i = 0; i < term.size(); ++i) f = f * s[i] + idx[term[i]];
    return f;
  };
  while (true) {
    acc[static_cast<size_t>(flat(out, os))] +=
        x.doubleAt(flat(a, x.shape())) * y.doubleAt(flat(b, y.shape()));
    size_t d = labels.size();
    while (d > 0) {
      --d;
      if (++idx[labels[d]] < size[labels[d]]) break;
      idx[labels[d]] = 0;
      if (d == 0) d = labels.size() + 1;  // wrapped the first label: done
      if (d > labels.size()) break;
    }
    if (d > labels.size()) break;
  }
  for (int64_t i = 0; i < r.numel(); ++i)
    r.data<float>()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
  return r;
}

struct EinsumCase {
  const char* a;
  const char* b;
  const char* out;
  Shape sa, sb;
};

class OpsAttnEinsum : public ::testing::TestWithParam<EinsumCase> {};

TEST_P(OpsAttnEinsum, MatchesNaiveReference) {
  const EinsumCase c = GetParam();
  const Tensor x = randomFloats(c.sa, -1, 1, 1), y = randomFloats(c.sb, -1, 1, 2);
  const std::string eq = std::string(c.a) + "," + c.b + "->" + c.out;
  const Tensor got = OneNode("Einsum", {In{x}, In{y}}).attr("equation", eq).run0();
  expectClose(got, naiveEinsum2(c.a, c.b, c.out, x, y), 1e-5f, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Forms, OpsAttnEinsum,
                         ::testing::Values(EinsumCase{"bhqd", "bhkd", "bhqk", {2, 3, 5, 4}, {2, 3, 6, 4}},
                                           EinsumCase{"bhqk", "bhkd", "bhqd", {2, 3, 5, 6}, {2, 3, 6, 4}},
                                           EinsumCase{"bij", "bjk", "bik", {3, 4, 5}, {3, 5, 2}},
                                           EinsumCase{"ij", "jk", "ki", {4, 5}, {5, 3}},
                                           EinsumCase{"bid", "jd", "bij", {2, 4, 3}, {5, 3}},
                                           EinsumCase{"i", "j", "ij", {4}, {3}},
                                           EinsumCase{"ij", "ij", "", {4, 3}, {4, 3}},
                                           EinsumCase{"bij", "bjk", "bk", {2, 3, 4}, {2, 4, 5}},
                                           EinsumCase{"ijx", "jk", "ik", {3, 4, 2}, {4, 5}}));

TEST(OpsAttnEinsumForms, ImplicitDiagonalEllipsisAndThreeInputs) {
  const Tensor m = floats({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  expectClose(OneNode("Einsum", {In{m}}).attr("equation", std::string("ii->i")).run0(),
              floats({1, 5, 9}, {3}));
  expectClose(OneNode("Einsum", {In{m}}).attr("equation", std::string("ii")).run0(), floats({15}, {}));
  // Implicit output: the once-used letters in alphabetical order, so "ji" transposes.
  expectClose(OneNode("Einsum", {In{m}}).attr("equation", std::string("ji")).run0(),
              floats({1, 4, 7, 2, 5, 8, 3, 6, 9}, {3, 3}));
  // "...": batch dims broadcast right-aligned.
  const Tensor a = randomFloats({2, 1, 3, 4}, -1, 1, 3), b = randomFloats({5, 4, 2}, -1, 1, 4);
  const Tensor got =
      OneNode("Einsum", {In{a}, In{b}}).attr("equation", std::string("...ij,...jk->...ik")).run0();
  EXPECT_EQ(shapeStr(got.shape()), shapeStr({2, 5, 3, 2}));
  // Three inputs: a chain of two products.
  const Tensor v = floats({1, 1, 1}, {3});
  expectClose(OneNode("Einsum", {In{v}, In{m}, In{v}}).attr("equation", std::string("i,ij,j->")).run0(),
              floats({45}, {}));
  // Integers accumulate exactly.
  const Tensor k = Tensor::fromVector<int64_t>({1, 2, 3, 4}, {2, 2});
  const Tensor r = OneNode("Einsum", {In{k}, In{k}}).attr("equation", std::string("ij,jk->ik")).run0();
  EXPECT_EQ(r.toInt64Vector(), (std::vector<int64_t>{7, 10, 15, 22}));
}

TEST(OpsAttnErrors, EinsumNamesNodeEquationAndShape) {
  const Tensor x = randomFloats({2, 3}, -1, 1, 1);
  expectThrowWith<ShapeError>(
      [&] { OneNode("Einsum", {In{x}}).attr("equation", std::string("ijk->i")).infer(); },
      "node 'node_under_test' (Einsum): equation 'ijk->i': Einsum term 'ijk' does not fit input 0 of shape "
      "[2,3]");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("Einsum", {In{x}, In{x}}).attr("equation", std::string("ij,jk->ik")).infer();
      },
      "label 'j' is 3 in one input but 2 in input 1 of shape [2,3]");
  expectThrowWith<ShapeError>(
      [&] { OneNode("Einsum", {In{x}}).attr("equation", std::string("ij,jk")).infer(); },
      "has 2 input terms but the node has 1 inputs");
  expectThrowWith<ShapeError>(
      [&] { OneNode("Einsum", {In{x}}).attr("equation", std::string("ij->iz")).infer(); },
      "output label 'z' of 'ij->iz' is in no input term");
  expectThrowWith<ShapeError>(
      [&] { OneNode("Einsum", {In{x}}).attr("equation", std::string("i$->i")).infer(); },
      "invalid character");
}

// ---------------------------------------------------------------- Trilu

TEST(OpsAttnTrilu, UpperLowerAndRuntimeK) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  expectClose(OneNode("Trilu", {In{x}}).run0(), floats({1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}, {3, 4}));
  expectClose(OneNode("Trilu", {In{x}, In{i64(1)}}).attr("upper", int64_t{0}).run0(),
              floats({1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12}, {3, 4}));
  expectClose(OneNode("Trilu", {In{x}, In{i64(-1)}}).run0(),
              floats({1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}, {3, 4}));
  expectClose(OneNode("Trilu", {In{x}, In{i64(9)}}).run0(), floats(std::vector<float>(12, 0), {3, 4}));
  // Batched: every matrix of the leading dims; an Inf in the dropped triangle becomes 0.
  Tensor b = floats({std::numeric_limits<float>::infinity(), 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  expectClose(OneNode("Trilu", {In{b}}).attr("upper", int64_t{1}).run0(),
              floats({INFINITY, 1, 0, 3, 4, 5, 0, 7}, {2, 2, 2}));
  const Tensor m = floats({std::numeric_limits<float>::infinity(), 1, 2, 3}, {2, 2});
  expectClose(OneNode("Trilu", {In{m}, In{i64(-1)}}).attr("upper", int64_t{0}).run0(),
              floats({0, 0, 2, 0}, {2, 2}));
}

TEST(OpsAttnErrors, TriluRankAndK) {
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Trilu", {In{floats({1, 2}, {2})}}).infer();
      },
      "Trilu node 'node_under_test' needs an input of rank >= 2, got shape [2]");
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Trilu", {In{floats({1, 2, 3, 4}, {2, 2})}, In{int64s({1, 2}, {2})}}).infer();
      },
      "k must be a scalar, got shape [2]");
}

// ---------------------------------------------------------------- Det, MVN, LRN

TEST(OpsAttnDet, KnownValuesSingularAndBatched) {
  const Tensor a = floats({4, 3, 6, 3, 0, 1, 2, 5, 1, 2, 3, 4, 2, 4, 6, 8}, {2, 2, 2, 2});
  expectClose(OneNode("Det", {In{a}}).run0(), floats({-6, -2, -2, -8}, {2, 2}), 1e-6f, 1e-6f);
  const Tensor s = floats({1, 2, 3, 2, 4, 6, 0, 1, 5}, {3, 3});  // rows 0 and 1 are dependent
  EXPECT_EQ(OneNode("Det", {In{s}}).run0().doubleAt(0), 0.0);
  const Tensor p = floats({0, 1, 0, 0, 0, 1, 1, 0, 0}, {3, 3});  // a cyclic permutation: +1, needs pivoting
  EXPECT_EQ(OneNode("Det", {In{p}}).run0().doubleAt(0), 1.0);
  expectThrowWith<ShapeError>(
      [] {
        OneNode("Det", {In{floats({1, 2, 3, 4, 5, 6}, {2, 3})}}).infer();
      },
      "Det node 'node_under_test' needs square matrices in the last two dims, got shape [2,3]");
}

TEST(OpsAttnNorm, MvnZeroMeanUnitVarianceAndConstantSlice) {
  const Tensor x = randomFloats({2, 3, 4, 5}, -3, 5, 9);
  const Tensor y = OneNode("MeanVarianceNormalization", {In{x}}).run0();
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, sq = 0;
    int n = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 20; ++i) {
        const double v = y.doubleAt((b * 3 + c) * 20 + i);
        s += v;
        sq += v * v;
        ++n;
      }
    EXPECT_NEAR(s / n, 0.0, 1e-5);
    EXPECT_NEAR(sq / n, 1.0, 1e-4);
  }
  const Tensor flat = floats(std::vector<float>(6, 2.5f), {1, 1, 2, 3});  // variance 0: 0, not NaN
  expectClose(OneNode("MeanVarianceNormalization", {In{flat}}).run0(),
              floats(std::vector<float>(6, 0), {1, 1, 2, 3}));
  expectThrowWith<ShapeError>(
      [] {
        OneNode("MeanVarianceNormalization", {In{floats({1, 2}, {1, 2})}}).infer();
      },
      "MeanVarianceNormalization axis 2 is out of range for rank 2");
}

TEST(OpsAttnNorm, LrnMatchesTheFormula) {
  const Tensor x = randomFloats({2, 5, 3, 2}, -2, 2, 4);
  const Tensor y =
      OneNode("LRN", {In{x}}).attr("size", int64_t{4}).attr("alpha", 0.01f).attr("bias", 2.0f).run0();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t i = 0; i < 6; ++i) {
        double ss = 0;
        for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(4, c + 2); ++k)
          ss += std::pow(x.doubleAt((n * 5 + k) * 6 + i), 2);
        const double want = x.doubleAt((n * 5 + c) * 6 + i) / std::pow(2.0 + 0.01 / 4 * ss, 0.75);
        EXPECT_NEAR(y.doubleAt((n * 5 + c) * 6 + i), want, 1e-6);
      }
  expectThrowWith<ShapeError>(
      [] {
        OneNode("LRN", {In{floats({1, 2}, {1, 2})}}).attr("size", int64_t{3}).infer();
      },
      "LRN node 'node_under_test' needs an input of rank >= 3 (N, C, ...), got shape [1,2]");
  expectThrowWith<ShapeError>(
      [] {
        OneNode("LRN", {In{floats({1, 2}, {1, 2, 1})}}).infer();
      },
      "needs a positive `size` attribute");
}

// ---------------------------------------------------------------- windows, mel, DFT, STFT

TEST(OpsAttnSignal, WindowsAndMel) {
  const Tensor hann = OneNode("HannWindow", {constant(Tensor::scalar<int32_t>(4))}).run0();
  expectClose(hann, floats({0, 0.5f, 1, 0.5f}, {4}), 1e-6f, 1e-7f);
  const Tensor sym = OneNode("HammingWindow", {constant(i64(3))}).attr("periodic", int64_t{0}).run0();
  expectClose(sym, floats({2.0f / 23, 1, 2.0f / 23}, {3}), 1e-6f, 1e-7f);
  const Tensor bl = OneNode("BlackmanWindow", {constant(i64(2))}).attr("output_datatype", int64_t{11}).run0();
  EXPECT_EQ(bl.dtype(), DType::Float64);
  EXPECT_NEAR(bl.doubleAt(1), 0.42 + 0.5 + 0.08, 1e-12);
  expectThrowWith<ShapeError>([] { OneNode("HannWindow", {In{i64(4)}}).infer(); },
                              "window size (input 0) must be a constant");
  const Tensor mel =
      OneNode("MelWeightMatrix", {constant(i64(8)), constant(i64(16)), constant(i64(8192)),
                                  constant(Tensor::scalar<float>(0)), constant(Tensor::scalar<float>(4096))})
          .run0();
  EXPECT_EQ(shapeStr(mel.shape()), shapeStr({9, 8}));
  EXPECT_EQ(mel.doubleAt(0 * 8 + 0), 1.0);
}

TEST(OpsAttnSignal, DftMatchesDirectSumAndInverts) {
  const Tensor x = randomFloats({2, 6, 3, 1}, -1, 1, 5);
  const Tensor y = OneNode("DFT", {In{x}}).attr("axis", int64_t{1}).run0();
  ASSERT_EQ(shapeStr(y.shape()), shapeStr({2, 6, 3, 2}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 6; ++k)
      for (int64_t i = 0; i < 3; ++i) {
        std::complex<double> s = 0;
        for (int64_t j = 0; j < 6; ++j)
          s += x.doubleAt((b * 6 + j) * 3 + i) * std::polar(1.0, -2 * M_PI * j * k / 6);
        EXPECT_NEAR(y.doubleAt(((b * 6 + k) * 3 + i) * 2), s.real(), 1e-5);
        EXPECT_NEAR(y.doubleAt(((b * 6 + k) * 3 + i) * 2 + 1), s.imag(), 1e-5);
      }
  const Tensor back = OneNode("DFT", {In{y}}).attr("axis", int64_t{1}).attr("inverse", int64_t{1}).run0();
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_NEAR(back.doubleAt(2 * i), x.doubleAt(i), 1e-5);
    EXPECT_NEAR(back.doubleAt(2 * i + 1), 0.0, 1e-5);
  }
  const Tensor half = OneNode("DFT", {In{x}, constant(i64(8))}).attr("onesided", int64_t{1}).run0();
  EXPECT_EQ(shapeStr(half.shape()), shapeStr({2, 5, 3, 2}));
  expectThrowWith<ShapeError>([&] { OneNode("DFT", {In{x}}).attr("axis", int64_t{3}).infer(); },
                              "DFT node 'node_under_test': axis 3 must name a signal dim");
  expectThrowWith<ShapeError>(
      [] {
        OneNode("DFT", {In{randomFloats({1, 4, 3}, 0, 1, 1)}}).infer();
      },
      "the last dim must be 1 (real) or 2 (complex), got shape [1,4,3]");
}

TEST(OpsAttnSignal, StftFramesWindowAndErrors) {
  const Tensor sig = randomFloats({1, 40, 1}, -1, 1, 6);
  const Tensor win = OneNode("HannWindow", {constant(i64(8))}).run0();
  const Tensor y = OneNode("STFT", {In{sig}, constant(i64(4)), In{win}}).run0();
  ASSERT_EQ(shapeStr(y.shape()), shapeStr({1, 9, 5, 2}));
  // Frame 3, bin 2 by hand.
  std::complex<double> s = 0;
  for (int64_t j = 0; j < 8; ++j)
    s += sig.doubleAt(12 + j) * win.doubleAt(j) * std::polar(1.0, -2 * M_PI * j * 2 / 8);
  EXPECT_NEAR(y.doubleAt((3 * 5 + 2) * 2), s.real(), 1e-5);
  EXPECT_NEAR(y.doubleAt((3 * 5 + 2) * 2 + 1), s.imag(), 1e-5);
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("STFT", {In{sig}, In{i64(4)}, In{win}}).infer();
      },
      "STFT frame_step (input 1) must be a constant");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("STFT", {In{sig}, constant(i64(4))}).infer();
      },
      "STFT node 'node_under_test': frame length -1 does not fit signal of shape [1,40,1]");
}

// ---------------------------------------------------------------- random ops: statistics

TEST(OpsAttnRandom, BernoulliAndUniformStatistics) {
  const int64_t n = 200000;
  const Tensor p = floats(std::vector<float>(static_cast<size_t>(n), 0.3f), {n});
  OneNode bern("Bernoulli", {In{p}});
  bern.attr("seed", 5.0f);
  const Tensor a = bern.run0();
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = a.doubleAt(i);
    ASSERT_TRUE(v == 0.0 || v == 1.0);
    mean += v;
  }
  mean /= n;
  EXPECT_NEAR(mean, 0.3, 5 * std::sqrt(0.3 * 0.7 / n));  // five standard errors
  // Same seed, same first run; p = 0 and p = 1 are exact; dtype attribute.
  OneNode again("Bernoulli", {In{p}});
  again.attr("seed", 5.0f);
  EXPECT_TRUE(again.run0().bitwiseEqual(a));
  const Tensor edges = OneNode("Bernoulli", {In{floats({0, 1, 0, 1}, {4})}}).attr("dtype", int64_t{9}).run0();
  EXPECT_EQ(edges.dtype(), DType::Bool);
  EXPECT_EQ(edges.toInt64Vector(), (std::vector<int64_t>{0, 1, 0, 1}));

  OneNode uni("RandomUniformLike", {In{p}});
  uni.attr("low", -2.0f).attr("high", 4.0f).attr("seed", 1.0f);
  const Tensor u = uni.run0();
  double s = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = u.doubleAt(i);
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 4.0);
    s += v;
    sq += v * v;
  }
  const double m = s / n, var = sq / n - m * m;
  EXPECT_NEAR(m, 1.0, 5 * std::sqrt(3.0 / n));  // uniform(-2, 4): mean 1, variance 36 / 12 = 3
  EXPECT_NEAR(var, 3.0, 0.05);
  EXPECT_FALSE(OpRegistry::instance().find("Bernoulli")->foldable);
  EXPECT_FALSE(OpRegistry::instance().find("RandomUniformLike")->foldable);
}

// ---------------------------------------------------------------- every op: NPU decision, INT8 rule

TEST(OpsAttnRegistry, EveryOpHasAQuantClassAndAnNpuDecision) {
  for (const char* op :
       {"Einsum", "Trilu", "Det", "MeanVarianceNormalization", "LRN", "DFT", "STFT", "BlackmanWindow",
        "HammingWindow", "HannWindow", "MelWeightMatrix", "Bernoulli", "RandomUniformLike"}) {
    const OpSchema* s = OpRegistry::instance().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_EQ(s->traits.quant_class, QuantClass::Float) << op;
    EXPECT_FALSE(s->traits.cpu_reason.empty()) << op;
  }
}

// ---------------------------------------------------------------- lower_einsum / lower_trilu

struct LowerCase {
  const char* equation;
  std::vector<Shape> shapes;
};

class OpsAttnLowerEinsum : public ::testing::TestWithParam<LowerCase> {};

TEST_P(OpsAttnLowerEinsum, LowersAndMatchesTheEinsumKernel) {
  const LowerCase c = GetParam();
  GraphBuilder b;
  std::vector<Value*> ins;
  for (size_t i = 0; i < c.shapes.size(); ++i) ins.push_back(b.input("x" + std::to_string(i), c.shapes[i]));
  b.output(b.op("Einsum", ins, attrs({{"equation", std::string(c.equation)}})));
  auto r = runPassChecked(b.graph(), "lower_einsum", 1e-5);
  EXPECT_EQ(r.changes, 1u) << c.equation;
  EXPECT_EQ(countOps(b.graph(), "Einsum"), 0u) << b.graph().dump();
}

INSTANTIATE_TEST_SUITE_P(
    Forms, OpsAttnLowerEinsum,
    ::testing::Values(LowerCase{"bhqd,bhkd->bhqk", {{1, 2, 5, 4}, {1, 2, 6, 4}}},
                      LowerCase{"bhqk,bhkd->bhqd", {{1, 2, 5, 6}, {1, 2, 6, 4}}},
                      LowerCase{"bij,bjk->bik", {{3, 4, 5}, {3, 5, 2}}},
                      LowerCase{"bid,jd->bij", {{2, 4, 3}, {5, 3}}}, LowerCase{"ij,jk->ki", {{4, 5}, {5, 3}}},
                      LowerCase{"bqhd,bkhd->bhqk", {{1, 5, 2, 4}, {1, 6, 2, 4}}},
                      LowerCase{"ijx,jk->ik", {{3, 4, 2}, {4, 5}}}, LowerCase{"i,j->ij", {{4}, {3}}},
                      LowerCase{"bhqd->bhdq", {{1, 2, 5, 4}}}, LowerCase{"bij->bj", {{2, 3, 4}}},
                      LowerCase{"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
                      LowerCase{"abcij,cbajk->abcik", {{2, 3, 2, 4, 3}, {2, 3, 2, 3, 5}}}));

TEST(OpsAttnLowerEinsum, ThreeBatchLabelsMergeIntoOneMatMulBatchDim) {
  GraphBuilder b;
  b.output(b.op("Einsum", {b.input("x", {2, 3, 2, 4, 3}), b.input("y", {2, 3, 2, 3, 5})},
                attrs({{"equation", std::string("abcij,abcjk->abcik")}})));
  EXPECT_EQ(runPassChecked(b.graph(), "lower_einsum", 1e-5).changes, 1u);
  for (const Node* n : b.graph().nodes()) {
    if (n->opType() == "MatMul") {
      EXPECT_EQ(n->output()->rank(), 3) << b.graph().dump();
    }
  }
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), passtest::rk3588Target()), 0u) << b.graph().dump();
}

TEST(OpsAttnLowerEinsumRefusals, DiagonalBroadcastAndThreeInputsStayOnTheCpu) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 3});
  Value* y = b.input("y", {1, 3, 4});
  Value* z = b.input("z", {2, 4, 5});
  b.output(b.op("Einsum", {x}, attrs({{"equation", std::string("ii->i")}}), "diag"));
  b.output(b.op("Einsum", {y, z}, attrs({{"equation", std::string("bij,bjk->bik")}}), "bcast"));
  b.output(b.op("Einsum", {x, x, x}, attrs({{"equation", std::string("ij,jk,kl->il")}}), "three"));
  auto r = runPassChecked(b.graph(), "lower_einsum", 1e-5);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(
      r.failedWith("Einsum 'diag' (\"ii->i\") stays on the CPU: input 0 repeats a label (a diagonal)"));
  EXPECT_TRUE(
      r.failedWith("Einsum 'bcast' (\"bij,bjk->bik\") stays on the CPU: label 'b' broadcasts a size-1 dim"));
  EXPECT_TRUE(r.failedWith("stays on the CPU: only 1- and 2-input equations are lowered"));
  EXPECT_EQ(runPassChecked(b.graph(), "lower_einsum", 1e-5, /*level=*/2).changes, 0u) << "changes numerics";
}

TEST(OpsAttnLowerEinsum, AttentionLandsOnTheNpu) {
  GraphBuilder b;
  Value* q = b.op("Relu", {b.input("q", {1, 4, 16, 8})});
  Value* k = b.op("Relu", {b.input("k", {1, 4, 16, 8})});
  Value* v = b.op("Relu", {b.input("v", {1, 4, 16, 8})});
  Value* s = b.op("Einsum", {q, k}, attrs({{"equation", std::string("bhqd,bhkd->bhqk")}}));
  Value* p = b.op("Softmax", {s}, attrs({{"axis", int64_t{-1}}}));
  b.output(b.op("Einsum", {p, v}, attrs({{"equation", std::string("bhqk,bhkd->bhqd")}})));
  const PassTarget t = passtest::rk3588Target();
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), t), 2u);
  auto r = runPassChecked(b.graph(), "lower_einsum", 1e-5);
  EXPECT_EQ(r.changes, 2u);
  EXPECT_EQ(countOps(b.graph(), "MatMul"), 2u);
  EXPECT_EQ(passtest::cpuNodeCount(b.graph(), t), 0u) << b.graph().dump();
}

TEST(OpsAttnLowerTrilu, MaskMulMatchesAndRefusesARuntimeK) {
  for (int64_t upper : {0, 1}) {
    for (int64_t k : {-2, 0, 1, 7}) {
      GraphBuilder b;
      Value* x = b.op("Relu", {b.input("x", {2, 3, 5, 6})});
      b.output(b.op("Trilu", {x, b.constant(i64(k))}, attrs({{"upper", upper}})));
      auto r = runPassChecked(b.graph(), "lower_trilu", 0.0);
      EXPECT_EQ(r.changes, 1u);
      EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
      EXPECT_EQ(passtest::cpuNodeCount(b.graph(), passtest::rk3588Target()), 0u);
    }
  }
  GraphBuilder b;
  Value* x = b.input("x", {4, 4});
  b.output(b.op("Trilu", {x, b.input("k", {}, DType::Int64)}, {}, "tri"));
  auto r = runPassChecked(b.graph(), "lower_trilu", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("Trilu 'tri' stays on the CPU: k is not a constant scalar"));
}

// ---------------------------------------------------------------- INT8 simulator

TEST(OpsAttnQuant, SimulatorReferenceAndFastPathsAgreeToTheBit) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 6, 6});
  Value* l = b.op("LRN", {x}, attrs({{"size", int64_t{3}}}));
  Value* e = b.op("Einsum", {l}, attrs({{"equation", std::string("nchw->nhwc")}}));
  Value* t = b.op("Trilu", {e});
  Value* m = b.op("MeanVarianceNormalization", {t}, attrs({{"axes", std::vector<int64_t>{0, 1, 2}}}));
  Value* y = b.op("MatMul", {m, b.randomConstant({4, 5}, 3)});
  b.output(b.op("Einsum", {y, y}, attrs({{"equation", std::string("nhwc,nhvc->nhwv")}})));
  std::vector<Tensor> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back(passtest::randomTensor({1, 4, 6, 6}, 40 + s, -2, 2));
  quant::Calibrator cal(b.graph());
  for (const Tensor& s : samples) cal.addSample({s});
  const quant::QuantPlan plan = quant::buildQuantPlan(b.graph(), cal.ranges({}), {});
  quant::QuantizedExecutor fast(b.graph(), plan,
                                quant::SimOptions{quant::SimMode::Int8, quant::SimPath::Fast});
  quant::QuantizedExecutor ref(b.graph(), plan,
                               quant::SimOptions{quant::SimMode::Int8, quant::SimPath::Reference});
  const std::string plan_text = fast.describe();
  EXPECT_NE(plan_text.find("Einsum -> fp16"), std::string::npos) << plan_text;
  for (const Tensor& s : samples) {
    const Tensor a = fast.run({s})[0], r = ref.run({s})[0];
    EXPECT_TRUE(a.bitwiseEqual(r));
    const Tensor f = evalGraph(b.graph(), {{"x", s}})[0];
    double dot = 0, na = 0, nf = 0;
    for (int64_t i = 0; i < f.numel(); ++i) {
      dot += a.doubleAt(i) * f.doubleAt(i);
      na += a.doubleAt(i) * a.doubleAt(i);
      nf += f.doubleAt(i) * f.doubleAt(i);
    }
    EXPECT_GT(dot / std::sqrt(na * nf), 0.99);
  }
}

}  // namespace
}  // namespace npuc
