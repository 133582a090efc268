// Quantized op family (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
// QLinearMatMul, ConvInteger, MatMulInteger): the ONNX rounding and saturation edge cases, per-axis
// and per-channel parameters, the integer kernels against naive int64 loops written here, and the
// errors for bad input (each names the node, the op and the shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ew_test_util.h"

namespace npuc {
namespace {

using ewtest::randomInts;

using ewtest::constant;
using ewtest::expectThrowWith;
using ewtest::floats;
using ewtest::In;
using ewtest::OneNode;
using ewtest::randomFloats;

// The node's inputs, all runtime values (graph inputs).
std::vector<In> ins(std::vector<Tensor> ts) {
  std::vector<In> v;
  for (Tensor& t : ts) v.push_back(In{std::move(t)});
  return v;
}

template <typename T>
Tensor tensorOf(std::vector<T> v, Shape shape) {
  return Tensor::fromVector<T>(v, std::move(shape));
}

template <typename T>
std::vector<int64_t> values(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.data<T>()[i]);
  return v;
}

// The spec's requantization, written out independently of the kernels' helpers.
int64_t requant(int64_t acc, float multiplier, int64_t zp, int64_t lo, int64_t hi) {
  const float v = static_cast<float>(acc) * multiplier;
  const double r = std::nearbyint(static_cast<double>(v)) + static_cast<double>(zp);
  return static_cast<int64_t>(std::min<double>(hi, std::max<double>(lo, r)));
}

// ---------------------------------------------------------------- QuantizeLinear

TEST(OpsQops, QuantizeRoundsHalfToEvenAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = floats({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.f, -300.f, nan}, {8});
  const Tensor u8 =
      OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(10)})).run0();
  EXPECT_EQ(u8.dtype(), DType::UInt8);
  EXPECT_EQ(values<uint8_t>(u8), (std::vector<int64_t>{10, 12, 12, 10, 8, 255, 0, 0}));
  const Tensor i8 =
      OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(-3)})).run0();
  EXPECT_EQ(i8.dtype(), DType::Int8);
  EXPECT_EQ(values<int8_t>(i8), (std::vector<int64_t>{-3, -1, -1, -3, -5, 127, -128, -128}));
}

TEST(OpsQops, QuantizeWithoutZeroPointIsUint8AndPerTensorScaleMayBeOneElement1D) {
  const Tensor y =
      OneNode("QuantizeLinear", ins({floats({-1.f, 0.f, 0.3f, 0.7f, 100.f}, {5}), floats({0.5f}, {1})}))
          .run0();
  EXPECT_EQ(y.dtype(), DType::UInt8);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<int64_t>{0, 0, 1, 1, 200}));
}

TEST(OpsQops, QuantizePerAxis) {
  // x [2, 3, 2], one scale and zero point per slice of axis 1 (and of axis -2, the same axis).
  const Tensor x = randomFloats({2, 3, 2}, -4.f, 4.f, 3);
  const std::vector<float> s{0.05f, 0.1f, 0.5f};
  const std::vector<int8_t> z{-5, 0, 7};
  for (int64_t axis : {1, -2}) {
    const Tensor y = OneNode("QuantizeLinear", ins({x, floats(s, {3}), tensorOf<int8_t>(z, {3})}))
                         .attr("axis", axis)
                         .run0();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = (i / 2) % 3;
      const float q = std::nearbyint(x.data<float>()[i] / s[c]) + z[c];
      EXPECT_EQ(y.data<int8_t>()[i], static_cast<int8_t>(std::clamp(q, -128.f, 127.f))) << "element " << i;
    }
  }
}

TEST(OpsQops, QuantizeOutputDtypeAttributeAndBlockedQuantizationRefused) {
  const Tensor x = floats({-1.f, 1.f}, {2});
  const Tensor y = OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(0.5f)}))
                       .attr("output_dtype", int64_t{3})
                       .run0();
  EXPECT_EQ(y.dtype(), DType::Int8);
  EXPECT_EQ(values<int8_t>(y), (std::vector<int64_t>{-2, 2}));
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0)}))
            .attr("output_dtype", int64_t{3})
            .infer();
      },
      "output_dtype int8 disagrees with y_zero_point's type uint8");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(1.f)}))
            .attr("output_dtype", int64_t{22})
            .infer();
      },
      "output_dtype 22 (an ONNX type code");
  expectThrowWith<UnsupportedOpError>(
      [&] {
        OneNode("DequantizeLinear", ins({tensorOf<int8_t>({1, 2}, {2}), floats({1.f}, {1})}))
            .attr("block_size", int64_t{2})
            .infer();
      },
      "DequantizeLinear with block_size 2 (opset 21 blocked quantization) is not supported");
}

// ---------------------------------------------------------------- DequantizeLinear

TEST(OpsQops, DequantizeInt32BiasAndPerAxis) {
  const Tensor b = OneNode("DequantizeLinear",
                           ins({tensorOf<int32_t>({-1000000, 0, 7}, {3}), Tensor::scalar<float>(0.5f)}))
                       .run0();
  EXPECT_EQ(b.dtype(), DType::Float32);
  EXPECT_EQ(b.data<float>()[0], -500000.f);
  EXPECT_EQ(b.data<float>()[2], 3.5f);
  const Tensor y = OneNode("DequantizeLinear",
                           ins({tensorOf<uint8_t>({0, 255, 128, 1, 2, 3}, {2, 3}),
                                floats({1.f, 0.5f, 0.25f}, {3}), tensorOf<uint8_t>({128, 128, 0}, {3})}))
                       .attr("axis", int64_t{-1})
                       .run0();
  const std::vector<float> want{-128.f, 63.5f, 32.f, -127.f, -63.f, 0.75f};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], want[static_cast<size_t>(i)]) << i;
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

TEST(OpsQops, DynamicQuantizeEdgeRanges) {
  // A constant tensor: the range widened to hold 0 is empty; ONNX Runtime's scale 1, zero point 0.
  auto zeros = OneNode("DynamicQuantizeLinear", ins({floats({0.f, 0.f}, {2})}), 3).run();
  EXPECT_EQ(zeros[1].data<float>()[0], 1.f);
  EXPECT_EQ(zeros[2].data<uint8_t>()[0], 0);
  // All positive: min widened to 0.
  auto pos = OneNode("DynamicQuantizeLinear", ins({floats({1.f, 2.f, 3.f}, {3})}), 3).run();
  EXPECT_FLOAT_EQ(pos[1].data<float>()[0], 3.f / 255.f);
  EXPECT_EQ(values<uint8_t>(pos[0]), (std::vector<int64_t>{85, 170, 255}));
  // All negative: zero point 255; with scale 1, -127.5 rounds to even (-128), then + 255.
  auto neg = OneNode("DynamicQuantizeLinear", ins({floats({-127.5f, -255.f}, {2})}), 3).run();
  EXPECT_EQ(neg[1].data<float>()[0], 1.f);
  EXPECT_EQ(neg[2].data<uint8_t>()[0], 255);
  EXPECT_EQ(values<uint8_t>(neg[0]), (std::vector<int64_t>{127, 0}));
  EXPECT_EQ(neg[1].shape(), Shape{});
}

// ---------------------------------------------------------------- QLinearConv / ConvInteger

struct ConvCase {
  int64_t n = 1, c = 4, h = 7, w = 6, m = 6, kh = 3, kw = 2, group = 2, stride = 2, dil = 1, pad = 1;
};

// acc[n, m, oh, ow] in int64 with zero points subtracted; x/w int8 or uint8 via doubleAt.
std::vector<int64_t> naiveConv(const ConvCase& k, const Tensor& x, int64_t zx, const Tensor& w,
                               const std::vector<int64_t>& zw, int64_t oh, int64_t ow) {
  std::vector<int64_t> acc(static_cast<size_t>(k.n * k.m * oh * ow), 0);
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          int64_t s = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = y * k.stride - k.pad + i * k.dil, ix = xo * k.stride - k.pad + j * k.dil;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t ci = (m / mg) * cg + c;
                const int64_t xv =
                    static_cast<int64_t>(x.doubleAt(((b * k.c + ci) * k.h + iy) * k.w + ix)) - zx;
                const int64_t wv =
                    static_cast<int64_t>(w.doubleAt(((m * cg + c) * k.kh + i) * k.kw + j)) - zw[m];
                s += xv * wv;
              }
          acc[static_cast<size_t>(((b * k.m + m) * oh + y) * ow + xo)] = s;
        }
  return acc;
}

TEST(OpsQops, QLinearConvPerChannelInt8MatchesNaiveRequantization) {
  const ConvCase k;
  const Tensor x = randomInts<int8_t>({k.n, k.c, k.h, k.w}, -128, 127, 1);
  const Tensor w = randomInts<int8_t>({k.m, k.c / k.group, k.kh, k.kw}, -127, 127, 2);
  const std::vector<float> ws{0.01f, 0.02f, 0.003f, 0.04f, 0.05f, 0.006f};
  const std::vector<int8_t> wz{0, 1, -2, 3, -4, 5};
  const Tensor bias = randomInts<int32_t>({k.m}, -5000, 5000, 3);
  const float xs = 0.02f, ys = 0.15f;
  const Tensor y =
      OneNode("QLinearConv",
              ins({x, Tensor::scalar<float>(xs), Tensor::scalar<int8_t>(-7), w, floats(ws, {6}),
                   tensorOf<int8_t>(wz, {6}), Tensor::scalar<float>(ys), Tensor::scalar<uint8_t>(100), bias}))
          .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
          .attr("strides", std::vector<int64_t>{2, 2})
          .attr("group", k.group)
          .run0();
  const int64_t oh = (k.h + 2 - k.kh) / 2 + 1, ow = (k.w + 2 - k.kw) / 2 + 1;
  ASSERT_EQ(y.shape(), (Shape{1, 6, oh, ow}));
  ASSERT_EQ(y.dtype(), DType::UInt8);
  const std::vector<int64_t> zw(wz.begin(), wz.end());
  const std::vector<int64_t> acc = naiveConv(k, x, -7, w, zw, oh, ow);
  int saturated = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t m = (i / (oh * ow)) % 6;
    const int64_t want =
        requant(acc[static_cast<size_t>(i)] + bias.data<int32_t>()[m], xs * ws[m] / ys, 100, 0, 255);
    saturated += want == 0 || want == 255;
    ASSERT_EQ(y.data<uint8_t>()[i], want) << "element " << i;
  }
  EXPECT_LT(saturated, y.numel()) << "the case should not be all saturated";
}

TEST(OpsQops, ConvIntegerPerChannelZeroPoint1dAnd3d) {
  // 1-D: uint8 x with zero point, per-output-channel uint8 weight zero points, dilation 2.
  const Tensor x = randomInts<uint8_t>({1, 2, 9}, 0, 255, 4);
  const Tensor w = randomInts<uint8_t>({3, 2, 3}, 0, 255, 5);
  const Tensor y =
      OneNode("ConvInteger", ins({x, w, Tensor::scalar<uint8_t>(128), tensorOf<uint8_t>({120, 130, 0}, {3})}))
          .attr("dilations", std::vector<int64_t>{2})
          .run0();
  ASSERT_EQ(y.dtype(), DType::Int32);
  ASSERT_EQ(y.shape(), (Shape{1, 3, 5}));
  const int64_t zw[3] = {120, 130, 0};
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t o = 0; o < 5; ++o) {
      int64_t s = 0;
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t j = 0; j < 3; ++j)
          s +=
              (x.data<uint8_t>()[c * 9 + o + 2 * j] - 128) * (w.data<uint8_t>()[(m * 2 + c) * 3 + j] - zw[m]);
      EXPECT_EQ(y.data<int32_t>()[m * 5 + o], s);
    }
  // 3-D, no zero points: every output of a 2x2x2 all-ones kernel sums a 2x2x2 block.
  Tensor x3(DType::Int8, {1, 1, 3, 3, 3});
  for (int64_t i = 0; i < 27; ++i) x3.data<int8_t>()[i] = static_cast<int8_t>(i - 13);
  Tensor w3(DType::Int8, {1, 1, 2, 2, 2});
  for (int64_t i = 0; i < 8; ++i) w3.data<int8_t>()[i] = 1;
  const Tensor y3 = OneNode("ConvInteger", ins({x3, w3})).run0();
  ASSERT_EQ(y3.shape(), (Shape{1, 1, 2, 2, 2}));
  // Block at (0,0,0): elements 0,1,3,4,9,10,12,13 minus 13 each.
  EXPECT_EQ(y3.data<int32_t>()[0], (0 + 1 + 3 + 4 + 9 + 10 + 12 + 13) - 8 * 13);
}

// ---------------------------------------------------------------- QLinearMatMul / MatMulInteger

TEST(OpsQops, QLinearMatMulBroadcastsBatchesWithPerColumnB) {
  const Tensor a = randomInts<uint8_t>({2, 1, 3, 5}, 0, 255, 6);
  const Tensor b = randomInts<int8_t>({3, 5, 4}, -128, 127, 7);
  const std::vector<float> bs{0.01f, 0.02f, 0.03f, 0.04f};
  const std::vector<int8_t> bz{0, -1, 2, 0};
  const float as = 0.03f, ys = 0.2f;
  const Tensor y = OneNode("QLinearMatMul", ins({a, Tensor::scalar<float>(as), Tensor::scalar<uint8_t>(120),
                                                 b, floats(bs, {4}), tensorOf<int8_t>(bz, {4}),
                                                 Tensor::scalar<float>(ys), Tensor::scalar<int8_t>(-10)}))
                       .run0();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3, 4}));
  ASSERT_EQ(y.dtype(), DType::Int8);
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          int64_t s = 0;
          for (int64_t t = 0; t < 5; ++t)
            s += (a.data<uint8_t>()[(p * 3 + i) * 5 + t] - 120) *
                 (b.data<int8_t>()[(q * 5 + t) * 4 + j] - bz[j]);
          const int64_t want = requant(s, as * bs[j] / ys, -10, -128, 127);
          ASSERT_EQ(y.data<int8_t>()[((p * 3 + q) * 3 + i) * 4 + j], want) << p << q << i << j;
        }
}

TEST(OpsQops, MatMulIntegerPerRowAndPerColumnZeroPointsAnd1dA) {
  const Tensor a = randomInts<uint8_t>({3, 4}, 0, 255, 8);
  const Tensor b = randomInts<uint8_t>({4, 2}, 0, 255, 9);
  const std::vector<uint8_t> az{1, 2, 3}, bz{100, 200};
  const Tensor y =
      OneNode("MatMulInteger", ins({a, b, tensorOf<uint8_t>(az, {3}), tensorOf<uint8_t>(bz, {2})})).run0();
  ASSERT_EQ(y.shape(), (Shape{3, 2}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      int64_t s = 0;
      for (int64_t t = 0; t < 4; ++t)
        s += (a.data<uint8_t>()[i * 4 + t] - az[i]) * (b.data<uint8_t>()[t * 2 + j] - bz[j]);
      EXPECT_EQ(y.data<int32_t>()[i * 2 + j], s);
    }
  const Tensor v =
      OneNode("MatMulInteger",
              ins({tensorOf<int8_t>({1, -2, 3, -4}, {4}), randomInts<int8_t>({4, 2}, -3, 3, 10)}))
          .run0();
  EXPECT_EQ(v.shape(), (Shape{2}));
}

// ---------------------------------------------------------------- bad input

TEST(OpsQops, BadInputsNameNodeOpAndShapes) {
  const Tensor x = randomFloats({1, 3, 2}, -1.f, 1.f, 11);
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QuantizeLinear", ins({x, floats({1.f, 1.f, 1.f, 1.f}, {4})})).infer();
      },
      "node 'node_under_test' (QuantizeLinear): QuantizeLinear scale [4] must be a scalar or 1-D of size 3 "
      "(axis 1 of input [1,3,2])");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QuantizeLinear", ins({x, floats({1.f, 1.f, 1.f}, {3}), tensorOf<int8_t>({0, 0}, {2})}))
            .infer();
      },
      "zero point [2] must have the shape of the scale [3]");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QuantizeLinear", ins({x, Tensor::scalar<float>(1.f), Tensor::scalar<int32_t>(0)})).infer();
      },
      "QuantizeLinear output (y_zero_point / output_dtype) must be uint8, int8, uint16 or int16, got int32");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("DequantizeLinear",
                ins({tensorOf<uint8_t>({1}, {1}), Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(0)}))
            .infer();
      },
      "DequantizeLinear x_zero_point is int8 but x is uint8");
  const Tensor xq = randomInts<uint8_t>({1, 2, 4, 4}, 0, 255, 12);
  const Tensor wq = randomInts<int8_t>({4, 2, 3, 3}, -5, 5, 13);
  std::vector<Tensor> qconv{xq,
                            Tensor::scalar<float>(1.f),
                            Tensor::scalar<uint8_t>(0),
                            wq,
                            floats({1.f, 1.f, 1.f, 1.f, 1.f}, {5}),
                            Tensor::scalar<int8_t>(0),
                            Tensor::scalar<float>(1.f),
                            Tensor::scalar<uint8_t>(0)};
  expectThrowWith<ShapeError>([&] { OneNode("QLinearConv", ins(qconv)).infer(); },
                              "(QLinearConv): QLinearConv b/w scale [5] must be a scalar or 1-D of size 4");
  qconv[4] = Tensor::scalar<float>(1.f);
  qconv.push_back(floats({0.f, 0.f, 0.f, 0.f}, {4}));
  expectThrowWith<ShapeError>([&] { OneNode("QLinearConv", ins(qconv)).infer(); },
                              "QLinearConv bias must be int32, got float32");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("QLinearMatMul", ins({randomInts<uint8_t>({2, 3}, 0, 9, 1), Tensor::scalar<float>(1.f),
                                      Tensor::scalar<uint8_t>(0), randomInts<uint8_t>({4, 2}, 0, 9, 2),
                                      Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0),
                                      Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0)}))
            .infer();
      },
      "QLinearMatMul inner dims differ: A [2,3] has K=3, B [4,2] has K=4");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("ConvInteger", ins({randomFloats({1, 2, 4, 4}, 0.f, 1.f, 1), wq})).infer();
      },
      "(ConvInteger): ConvInteger x must be uint8 or int8, got float32");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("ConvInteger", ins({xq, randomInts<uint8_t>({4, 3, 3, 3}, 0, 9, 1)})).infer();
      },
      "has 2 channels but W [4,3,3,3]");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("MatMulInteger",
                ins({randomInts<uint8_t>({2, 3}, 0, 9, 1), randomInts<uint8_t>({3, 2}, 0, 9, 2),
                     tensorOf<uint8_t>({1, 2, 3}, {3})}))
            .infer();
      },
      "MatMulInteger a_zero_point [3] must be a scalar or 1-D of size 2");
}

}  // namespace
}  // namespace npuc
