// npuc's own ops (ai.npuc): Gelu, SiLU, GLU, RMSNorm against their defining formulas in double.
#include <gtest/gtest.h>

#include <cmath>

#include "ew_test_util.h"

namespace npuc {
namespace {

using ewtest::expectClose;
using ewtest::expectThrowWith;
using ewtest::In;
using ewtest::OneNode;
using ewtest::randomFloats;

OneNode npucNode(const std::string& op, std::vector<In> ins) {
  return OneNode(op, std::move(ins), 1, kNpucDomain);
}

Tensor mapRef(const Tensor& x, double (*f)(double)) {
  Tensor y(DType::Float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
  return y;
}

TEST(OpsNpuc, GeluBothApproximations) {
  const Tensor x = randomFloats({4, 33}, -9, 9, 1);
  OneNode exact = npucNode("Gelu", {In{x}});
  expectClose(exact.run0(), mapRef(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
              2e-6f, 1e-7f);
  OneNode tanh_mode = npucNode("Gelu", {In{x}});
  tanh_mode.attr("approximate", std::string("tanh"));
  expectClose(tanh_mode.run0(),
              mapRef(x,
                     [](double v) {
                       return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                     }),
              4e-6f, 1e-7f);
  OneNode bad = npucNode("Gelu", {In{x}});
  bad.attr("approximate", std::string("sigmoid"));
  expectThrowWith<UnsupportedOpError>([&] { bad.run(); }, "approximate='sigmoid'");
}

TEST(OpsNpuc, SiLU) {
  const Tensor x = randomFloats({3, 50}, -20, 20, 2);
  expectClose(npucNode("SiLU", {In{x}}).run0(), mapRef(x, [](double v) { return v / (1 + std::exp(-v)); }),
              2e-6f, 1e-12f);
  // The schema lives in the npuc domain only.
  EXPECT_NE(OpRegistry::instance().find("SiLU", kNpucDomain), nullptr);
  EXPECT_EQ(OpRegistry::instance().find("SiLU"), nullptr);
}

// a * sigmoid(b) with a / b the first / second half along `axis`.
Tensor referenceGlu(const Tensor& x, int64_t axis) {
  const int64_t a = axis < 0 ? axis + x.rank() : axis;
  Shape out = x.shape();
  out[a] /= 2;
  const std::vector<int64_t> st = shapeStrides(x.shape());
  const std::vector<int64_t> ost = shapeStrides(out);
  Tensor y(DType::Float32, out);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t xi = 0;
    for (int64_t d = 0; d < x.rank(); ++d) xi += (o / ost[d]) % out[d] * st[d];
    const double av = x.data<float>()[xi];
    const double bv = x.data<float>()[xi + out[a] * st[a]];
    y.data<float>()[o] = static_cast<float>(av / (1 + std::exp(-bv)));
  }
  return y;
}

TEST(OpsNpuc, GluSplitsAlongAnyAxis) {
  const Tensor x = randomFloats({2, 6, 4}, -4, 4, 3);
  for (int64_t axis : {-1, 1, 0}) {
    SCOPED_TRACE(axis);
    OneNode n = npucNode("GLU", {In{x}});
    n.attr("axis", axis);
    expectClose(n.run0(), referenceGlu(x, axis), 2e-6f, 1e-7f);
  }
  OneNode odd = npucNode("GLU", {In{randomFloats({2, 5}, 0, 1, 4)}});
  expectThrowWith<ShapeError>([&] { odd.infer(); }, "has odd size 5");
}

// x / sqrt(mean(x^2 over dims axis..) + eps) * scale, with scale indexed within the normalized block.
Tensor referenceRms(const Tensor& x, const Tensor& scale, int64_t axis, double eps) {
  const int64_t a = axis < 0 ? axis + x.rank() : axis;
  const int64_t n = shapeNumel(Shape(x.shape().begin() + a, x.shape().end()));
  Tensor y(DType::Float32, x.shape());
  for (int64_t r = 0; r < x.numel() / n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += std::pow(x.data<float>()[r * n + i], 2);
    const double inv = 1 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double s = scale.numel() == 1 ? scale.data<float>()[0] : scale.data<float>()[i];
      y.data<float>()[r * n + i] = static_cast<float>(x.data<float>()[r * n + i] * inv * s);
    }
  }
  return y;
}

TEST(OpsNpuc, RmsNormOverTrailingDims) {
  const Tensor x = randomFloats({2, 3, 37}, -3, 3, 5);
  const Tensor scale = randomFloats({37}, 0.5f, 1.5f, 6);
  OneNode last = npucNode("RMSNorm", {In{x}, In{scale}});
  expectClose(last.run0(), referenceRms(x, scale, -1, 1e-5), 3e-6f, 1e-7f);

  const Tensor scale2 = randomFloats({1, 3, 37}, 0.5f, 1.5f, 7);  // leading 1 allowed
  OneNode two = npucNode("RMSNorm", {In{x}, In{scale2}});
  two.attr("axis", int64_t{1}).attr("epsilon", 0.5f);
  expectClose(two.run0(), referenceRms(x, scale2, 1, 0.5), 3e-6f, 1e-7f);

  const Tensor scalar = Tensor::scalar(2.0f);
  expectClose(npucNode("RMSNorm", {In{x}, In{scalar}}).run0(), referenceRms(x, scalar, -1, 1e-5), 3e-6f,
              1e-7f);

  OneNode bad = npucNode("RMSNorm", {In{x}, In{randomFloats({3}, 0, 1, 8)}});
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "does not match the normalized dims [37]");
}

}  // namespace
}  // namespace npuc
