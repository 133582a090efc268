// Reduction op family: Reduce* against a naive "for every input element, find its output
// element" reference over many axis sets, ArgMax/ArgMin tie rules, Softmax/LogSoftmax stability,
// TopK ordering, and the shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "ew_test_util.h"

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

// Naive reference: groups input elements by output element (reduced coordinates dropped), then
// applies `fold` to each group's values.
Tensor referenceReduce(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                       const std::function<double(const std::vector<double>&)>& fold) {
  const Shape& in = x.shape();
  const int64_t rank = x.rank();
  std::vector<bool> red(rank, axes.empty());
  for (int64_t a : axes) red[a < 0 ? a + rank : a] = true;
  Shape out, out_nokeep;
  for (int64_t d = 0; d < rank; ++d) {
    if (!red[d]) out_nokeep.push_back(in[d]);
    if (!red[d] || keepdims) out.push_back(red[d] ? 1 : in[d]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(shapeNumel(out_nokeep)));
  const std::vector<int64_t> strides = shapeStrides(in);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!red[d]) o = o * in[d] + (i / strides[d]) % in[d];
    }
    groups[o].push_back(x.doubleAt(i));
  }
  Tensor y(DType::Float32, out);
  for (size_t o = 0; o < groups.size(); ++o) y.data<float>()[o] = static_cast<float>(fold(groups[o]));
  return y;
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

struct ReduceCase {
  const char* op;
  std::function<double(const std::vector<double>&)> fold;
};

std::vector<ReduceCase> reduceCases() {
  return {
      {"ReduceSum", [](auto& v) { return sum(v); }},
      {"ReduceMean", [](auto& v) { return sum(v) / v.size(); }},
      {"ReduceMax", [](auto& v) { return *std::max_element(v.begin(), v.end()); }},
      {"ReduceMin", [](auto& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd", [](auto& v) { return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>()); }},
      {"ReduceL1",
       [](auto& v) {
         return std::accumulate(v.begin(), v.end(), 0.0, [](double a, double b) { return a + std::fabs(b); });
       }},
      {"ReduceSumSquare", [](auto& v) { return std::inner_product(v.begin(), v.end(), v.begin(), 0.0); }},
      {"ReduceL2", [](auto& v) { return std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0)); }},
      {"ReduceLogSumExp",
       [](auto& v) {
         double s = 0;
         for (double e : v) s += std::exp(e);
         return std::log(s);
       }},
  };
}

TEST(OpsReduce, AllOpsOverManyAxisSets) {
  // Values near 1 keep ReduceProd well-conditioned.
  const Tensor x = randomFloats({3, 4, 5, 6}, 0.6f, 1.4f, 7);
  const std::vector<std::vector<int64_t>> axis_sets = {
      {}, {0}, {1}, {3}, {-1}, {1, 2}, {2, 3}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {0, 3}, {-3, -1}};
  for (const ReduceCase& rc : reduceCases()) {
    for (const auto& axes : axis_sets) {
      for (bool keep : {true, false}) {
        SCOPED_TRACE(std::string(rc.op) + " axes=" + shapeStr(axes) + " keepdims=" + std::to_string(keep));
        std::vector<In> ins = {In{x}};
        if (!axes.empty()) ins.push_back(constant(int64s(axes, {static_cast<int64_t>(axes.size())})));
        OneNode n(rc.op, ins);
        n.attr("keepdims", int64_t{keep});
        expectClose(n.run0(), referenceReduce(x, axes, keep, rc.fold), 3e-6f, 1e-6f);
      }
    }
  }
}

TEST(OpsReduce, EmptyAxesNoopAndReduceAll) {
  const Tensor x = randomFloats({2, 3}, -1, 1, 8);
  OneNode noop("ReduceSumSquare", {In{x}, constant(Tensor(DType::Int64, {0}))});
  noop.attr("noop_with_empty_axes", int64_t{1});
  expectClose(noop.run0(), x);  // identity, not x^2
  OneNode all("ReduceSum", {In{x}, constant(Tensor(DType::Int64, {0}))});
  all.attr("keepdims", int64_t{0});
  Tensor y = all.run0();
  EXPECT_EQ(y.rank(), 0);
  EXPECT_NEAR(y.data<float>()[0], sum(std::vector<double>(x.data<float>(), x.data<float>() + 6)), 1e-5);
}

TEST(OpsReduce, EmptySlicesGiveTheEmptySetValue) {
  const Tensor x(DType::Float32, {2, 0, 3});
  auto reduce = [&](const char* op) {
    OneNode n(op, {In{x}, constant(int64s({1}, {1}))});
    n.attr("keepdims", int64_t{0});
    Tensor y = n.run0();
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    return y.data<float>()[5];
  };
  EXPECT_EQ(reduce("ReduceSum"), 0.0f);
  EXPECT_EQ(reduce("ReduceProd"), 1.0f);
  EXPECT_EQ(reduce("ReduceMax"), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(reduce("ReduceLogSumExp"), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(reduce("ReduceMean")));
}

TEST(OpsReduce, IntegerSumProdMaxKeepExactValues) {
  const Tensor x = int64s({1, 2, 3, 4, 5, 6}, {2, 3});
  OneNode s("ReduceSum", {In{x}, constant(int64s({1}, {1}))});
  Tensor ys = s.run0();
  EXPECT_EQ(ys.dtype(), DType::Int64);
  EXPECT_EQ(ys.shape(), (Shape{2, 1}));
  EXPECT_EQ(ys.toInt64Vector(), (std::vector<int64_t>{6, 15}));
  OneNode p("ReduceProd", {In{x}, constant(int64s({0}, {1}))});
  p.attr("keepdims", int64_t{0});
  EXPECT_EQ(p.run0().toInt64Vector(), (std::vector<int64_t>{4, 10, 18}));
  EXPECT_EQ(OneNode("ReduceMax", {In{x}}).run0().toInt64Vector(), (std::vector<int64_t>{6}));
}

TEST(OpsReduce, LogSumExpIsStableForLargeInputs) {
  const Tensor x = floats({1000, 1000, -1000, 0}, {2, 2});
  OneNode n("ReduceLogSumExp", {In{x}, constant(int64s({1}, {1}))});
  Tensor y = n.run0();
  EXPECT_NEAR(y.data<float>()[0], 1000.0f + std::log(2.0f), 1e-3);
  EXPECT_NEAR(y.data<float>()[1], 0.0f, 1e-6);
}

TEST(OpsReduce, AxisErrors) {
  const Tensor x(DType::Float32, {2, 3});
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("ReduceSum", {In{x}, constant(int64s({1, -1}, {2}))}).infer();
      },
      "given twice");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("ReduceMean", {In{x}, constant(int64s({2}, {1}))}).infer();
      },
      "out of range for rank 2");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("ReduceMean", {In{x}, In{int64s({0}, {1})}}).infer();
      },
      "must be a constant");
}

// ---------------------------------------------------------------- ArgMax / ArgMin

TEST(OpsArg, TiesPickFirstOrLastIndex) {
  const Tensor x = floats({1, 5, 5, 0, 0, 2}, {6});
  auto arg = [&](const char* op, int64_t last) {
    OneNode n(op, {In{x}});
    n.attr("select_last_index", last).attr("keepdims", int64_t{0});
    Tensor y = n.run0();
    EXPECT_EQ(y.dtype(), DType::Int64);
    EXPECT_EQ(y.rank(), 0);
    return y.toInt64Vector()[0];
  };
  EXPECT_EQ(arg("ArgMax", 0), 1);
  EXPECT_EQ(arg("ArgMax", 1), 2);
  EXPECT_EQ(arg("ArgMin", 0), 3);
  EXPECT_EQ(arg("ArgMin", 1), 4);
}

TEST(OpsArg, MiddleAxisMatchesNaiveScan) {
  const Tensor x = randomFloats({3, 7, 4}, -5, 5, 17);
  for (int64_t axis : {1, -2, 0, 2}) {
    OneNode n("ArgMax", {In{x}});
    n.attr("axis", axis);
    Tensor y = n.run0();
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape want_shape = x.shape();
    want_shape[a] = 1;
    ASSERT_EQ(y.shape(), want_shape);
    const std::vector<int64_t> st = shapeStrides(x.shape());
    for (int64_t o = 0; o < y.numel(); ++o) {
      // Output element o = (outer, inner) with inner < st[a]; its slice starts at this x index.
      const int64_t base = (o / st[a]) * st[a] * x.dim(a) + o % st[a];
      int64_t best = 0;
      for (int64_t r = 1; r < x.dim(a); ++r) {
        if (x.data<float>()[base + r * st[a]] > x.data<float>()[base + best * st[a]]) best = r;
      }
      EXPECT_EQ(y.toInt64Vector()[o], best) << "axis " << axis << " o " << o;
    }
  }
}

TEST(OpsArg, HardmaxIsOneHotOfFirstMax) {
  OneNode n("Hardmax", {In{floats({1, 3, 3, 0, 5, 2, 2, 1}, {2, 4})}});
  expectClose(n.run0(), floats({0, 1, 0, 0, 1, 0, 0, 0}, {2, 4}));
  OneNode col("Hardmax", {In{floats({1, 3, 3, 0, 5, 2, 2, 1}, {2, 4})}});
  col.attr("axis", int64_t{0});
  expectClose(col.run0(), floats({0, 1, 1, 0, 1, 0, 0, 1}, {2, 4}));
}

// ---------------------------------------------------------------- CumSum

TEST(OpsCumSum, ExclusiveReverseAndRuntimeAxis) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  auto cumsum = [&](int64_t axis, int64_t exclusive, int64_t reverse) {
    OneNode n("CumSum", {In{x}, In{Tensor::scalar<int64_t>(axis)}});  // axis is not a constant
    n.attr("exclusive", exclusive).attr("reverse", reverse);
    return n.run0();
  };
  expectClose(cumsum(1, 0, 0), floats({1, 3, 6, 4, 9, 15}, {2, 3}));
  expectClose(cumsum(-1, 1, 0), floats({0, 1, 3, 0, 4, 9}, {2, 3}));
  expectClose(cumsum(1, 0, 1), floats({6, 5, 3, 15, 11, 6}, {2, 3}));
  expectClose(cumsum(1, 1, 1), floats({5, 3, 0, 11, 6, 0}, {2, 3}));
  expectClose(cumsum(0, 0, 0), floats({1, 2, 3, 5, 7, 9}, {2, 3}));
  OneNode ints("CumSum", {In{Tensor::fromVector<int32_t>({5, -2, 4})}, constant(Tensor::scalar<int32_t>(0))});
  EXPECT_EQ(ints.run0().toInt64Vector(), (std::vector<int64_t>{5, 3, 7}));
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("CumSum", {In{x}, constant(Tensor::scalar<int64_t>(2))}).infer();
      },
      "CumSum axis 2 is out of range");
}

// ---------------------------------------------------------------- Softmax / LogSoftmax

Tensor referenceSoftmax(const Tensor& x, int64_t axis, bool log) {
  const int64_t a = axis < 0 ? axis + x.rank() : axis;
  const std::vector<int64_t> st = shapeStrides(x.shape());
  Tensor y(DType::Float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t coord = (i / st[a]) % x.dim(a);
    const int64_t base = i - coord * st[a];
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t r = 0; r < x.dim(a); ++r) m = std::max(m, x.doubleAt(base + r * st[a]));
    for (int64_t r = 0; r < x.dim(a); ++r) s += std::exp(x.doubleAt(base + r * st[a]) - m);
    const double v = x.doubleAt(i) - m;
    y.data<float>()[i] = static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
  }
  return y;
}

TEST(OpsSoftmax, EveryAxisMatchesReference) {
  const Tensor x = randomFloats({3, 4, 21}, -8, 8, 5);
  for (bool log : {false, true}) {
    for (int64_t axis : {-1, 0, 1, 2, -2}) {
      SCOPED_TRACE(std::string(log ? "LogSoftmax" : "Softmax") + " axis " + std::to_string(axis));
      OneNode n(log ? "LogSoftmax" : "Softmax", {In{x}});
      n.attr("axis", axis);
      expectClose(n.run0(), referenceSoftmax(x, axis, log), 2e-6f, 1e-7f);
    }
  }
  // The default axis is -1 (opset 13).
  expectClose(OneNode("Softmax", {In{x}}).run0(), referenceSoftmax(x, -1, false), 2e-6f, 1e-7f);
}

TEST(OpsSoftmax, LargeInputsDoNotOverflow) {
  const Tensor x = floats({10000, 10001, 10002, -10000, -10001, -10002}, {2, 3});
  expectClose(OneNode("Softmax", {In{x}}).run0(), referenceSoftmax(x, -1, false), 2e-6f, 1e-7f);
  expectClose(OneNode("LogSoftmax", {In{x}}).run0(), referenceSoftmax(x, -1, true), 2e-6f, 1e-6f);
  expectThrowWith<ShapeError>(
      [&] {
        OneNode n("Softmax", {In{x}});
        n.attr("axis", int64_t{2});
        n.infer();
      },
      "axis 2 is out of range for rank 2");
}

// ---------------------------------------------------------------- TopK

TEST(OpsTopK, LargestAndSmallestWithTiesBySmallerIndex) {
  const Tensor x = floats({3, 1, 3, 2, 1, 3}, {6});
  OneNode big("TopK", {In{x}, constant(int64s({4}, {1}))}, 2);
  std::vector<Tensor> r = big.run();
  expectClose(r[0], floats({3, 3, 3, 2}, {4}));
  EXPECT_EQ(r[1].dtype(), DType::Int64);
  EXPECT_EQ(r[1].toInt64Vector(), (std::vector<int64_t>{0, 2, 5, 3}));
  OneNode small("TopK", {In{x}, constant(int64s({3}, {1}))}, 2);
  small.attr("largest", int64_t{0});
  r = small.run();
  expectClose(r[0], floats({1, 1, 2}, {3}));
  EXPECT_EQ(r[1].toInt64Vector(), (std::vector<int64_t>{1, 4, 3}));
}

TEST(OpsTopK, StridedAxisMatchesSortedReference) {
  const Tensor x = randomFloats({5, 3, 2}, -1, 1, 9);
  OneNode n("TopK", {In{x}, constant(int64s({2}, {1}))}, 2);
  n.attr("axis", int64_t{0});
  std::vector<Tensor> r = n.run();
  ASSERT_EQ(r[0].shape(), (Shape{2, 3, 2}));
  for (int64_t lane = 0; lane < 6; ++lane) {
    std::vector<std::pair<float, int64_t>> col;
    for (int64_t k = 0; k < 5; ++k) col.push_back({x.data<float>()[k * 6 + lane], k});
    std::sort(col.begin(), col.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (int64_t k = 0; k < 2; ++k) {
      EXPECT_EQ(r[0].data<float>()[k * 6 + lane], col[k].first);
      EXPECT_EQ(r[1].toInt64Vector()[k * 6 + lane], col[k].second);
    }
  }
}

TEST(OpsTopK, KMustBeConstantAndInRange) {
  const Tensor x(DType::Float32, {2, 4});
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("TopK", {In{x}, constant(int64s({5}, {1}))}, 2).infer();
      },
      "k = 5 is out of range for axis 1 of size 4");
  expectThrowWith<ShapeError>(
      [&] {
        OneNode("TopK", {In{x}, In{int64s({1}, {1})}}, 2).infer();
      },
      "TopK k (input 1) must be a constant");
}

}  // namespace
}  // namespace npuc
