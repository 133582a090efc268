// Data-movement and shape ops: shape inference and host kernels on one-node graphs, checked
// against naive reference loops written here (independently of the kernels' strided-copy and
// index-map machinery), plus the error messages of bad shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "opset/eval.h"
#include "opset/registry.h"

namespace npuc {
namespace {

// ---------------------------------------------------------------- helpers

// Builds one node whose inputs are either runtime graph inputs or constants, then infers and
// evaluates it.
struct OneNode {
  Graph g;
  std::vector<Value*> ins;
  std::vector<const Tensor*> feeds;
  std::vector<Tensor> held;  // runtime input tensors (stable addresses: reserved up front)
  Node* node = nullptr;

  OneNode() { held.reserve(16); }
  // A runtime input: its data is not visible to shape inference.
  OneNode& in(const Tensor& t) {
    held.push_back(t);
    ins.push_back(g.addInput("in" + std::to_string(ins.size()), t.dtype(), t.shape()));
    feeds.push_back(&held.back());
    return *this;
  }
  // A constant input (weights, shape tensors).
  OneNode& cst(const Tensor& t) {
    Value* v = g.addConstant(t);
    ins.push_back(v);
    feeds.push_back(&v->constant());
    return *this;
  }
  // An omitted optional input.
  OneNode& none() {
    ins.push_back(nullptr);
    feeds.push_back(nullptr);
    return *this;
  }
  Node& make(const std::string& op, size_t num_outputs = 1) {
    node = g.appendNode(op, ins, num_outputs, op + "_node");
    return *node;
  }
  void infer() { inferNode(*node); }
  std::vector<Tensor> run() {
    infer();
    return evalNode(*node, feeds);
  }
  Tensor run1() { return run().at(0); }
};

template <typename T>
Tensor tensorOf(Shape shape, std::vector<T> v) {
  return Tensor::fromVector(v, std::move(shape));
}

Tensor i64(std::vector<int64_t> v) {
  return Tensor::fromVector(v, {static_cast<int64_t>(v.size())});
}
Tensor f32s(std::vector<float> v) {
  return Tensor::fromVector(v, {static_cast<int64_t>(v.size())});
}

// 0, 1, 2, ... as `T`, in `shape`.
template <typename T>
Tensor iota(Shape shape) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(i);
  return t;
}

Tensor randomFloat(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Multi-index of flat index `i` in `shape`.
std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Expects `fn` to throw E with a message containing `needle`.
template <typename E, typename Fn>
void expectThrowWith(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

int aliasOf(OneNode& t) {
  KernelContext kctx{*t.node, {}, {}};
  for (size_t i = 0; i < t.node->numInputs(); ++i) kctx.input_types.push_back(TensorView(*t.feeds[i]));
  for (Value* o : t.node->outputs()) kctx.output_types.emplace_back(nullptr, o->dtype(), o->shape());
  return OpRegistry::instance().find(t.node->opType())->make_kernel(kctx)->aliasInput();
}

// ---------------------------------------------------------------- Reshape family

TEST(DmReshape, ZeroCopiesDimAndMinusOneIsInferred) {
  OneNode t;
  t.in(iota<float>({2, 3, 4})).cst(i64({0, -1, 2}));
  t.make("Reshape");
  Tensor out = t.run1();
  EXPECT_EQ(out.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(values<float>(out), values<float>(iota<float>({24})));
  EXPECT_EQ(aliasOf(t), 0);
}

TEST(DmReshape, AllowZeroKeepsEmptyDim) {
  OneNode t;
  t.in(Tensor(DType::Float32, {0, 3})).cst(i64({3, 0}));
  t.make("Reshape").attrs().set("allowzero", int64_t{1});
  EXPECT_EQ(t.run1().shape(), (Shape{3, 0}));
}

TEST(DmReshape, BadShapesAreNamed) {
  {
    OneNode t;
    t.in(iota<float>({2, 3})).cst(i64({-1, -1}));
    t.make("Reshape");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "more than one -1");
  }
  {
    OneNode t;
    t.in(iota<float>({2, 3})).cst(i64({4, 2}));
    t.make("Reshape");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "cannot reshape [2,3]");
  }
  {
    OneNode t;
    t.in(iota<float>({2, 3})).in(i64({3, 2}));
    t.make("Reshape");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "must be a constant");
  }
}

TEST(DmReshape, FlattenAxes) {
  for (int64_t axis : {0, 1, 2, 3, -1, -3}) {
    OneNode t;
    t.in(iota<int64_t>({2, 3, 4}));
    t.make("Flatten").attrs().set("axis", axis);
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const Shape dims{2, 3, 4};
    const int64_t outer = std::accumulate(dims.begin(), dims.begin() + a, int64_t{1}, std::multiplies<>());
    Tensor out = t.run1();
    EXPECT_EQ(out.shape(), (Shape{outer, 24 / outer})) << "axis " << axis;
    EXPECT_EQ(values<int64_t>(out), values<int64_t>(iota<int64_t>({24})));
  }
  OneNode bad;
  bad.in(iota<float>({2, 3}));
  bad.make("Flatten").attrs().set("axis", int64_t{3});
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "out of range");
}

TEST(DmReshape, SqueezeUnsqueeze) {
  {
    OneNode t;
    t.in(iota<float>({1, 3, 1, 2}));
    t.make("Squeeze");
    EXPECT_EQ(t.run1().shape(), (Shape{3, 2}));
  }
  {
    OneNode t;
    t.in(iota<float>({1, 3, 1, 2})).cst(i64({-2}));
    t.make("Squeeze");
    EXPECT_EQ(t.run1().shape(), (Shape{1, 3, 2}));
  }
  {
    OneNode t;
    t.in(iota<float>({1, 3})).cst(i64({1}));
    t.make("Squeeze");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "cannot squeeze axis 1");
  }
  {
    OneNode t;  // unsorted and negative axes address the output rank
    t.in(iota<float>({3, 4})).cst(i64({-1, 0, 2}));
    t.make("Unsqueeze");
    Tensor out = t.run1();
    EXPECT_EQ(out.shape(), (Shape{1, 3, 1, 4, 1}));
    EXPECT_EQ(values<float>(out), values<float>(iota<float>({12})));
    EXPECT_EQ(aliasOf(t), 0);
  }
  {
    OneNode t;
    t.in(iota<float>({3})).cst(i64({0, 0}));
    t.make("Unsqueeze");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "repeats axis 0");
  }
}

TEST(DmReshape, IdentityAndDropoutMask) {
  OneNode t;
  t.in(tensorOf<int32_t>({3}, {7, -1, 5}));
  t.make("Dropout", 2);
  auto outs = t.run();
  EXPECT_EQ(values<int32_t>(outs[0]), (std::vector<int32_t>{7, -1, 5}));
  ASSERT_EQ(outs[1].dtype(), DType::Bool);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(outs[1].intAt(i), 1);
  EXPECT_EQ(aliasOf(t), 0);

  OneNode train;
  train.in(f32s({1, 2})).cst(Tensor::scalar<float>(0.5f)).cst(Tensor::scalar<bool>(true));
  train.make("Dropout");
  EXPECT_THROW(train.infer(), UnsupportedOpError);

  OneNode id;
  id.in(tensorOf<uint8_t>({2}, {9, 200}));
  id.make("Identity");
  EXPECT_EQ(values<uint8_t>(id.run1()), (std::vector<uint8_t>{9, 200}));
  EXPECT_EQ(aliasOf(id), 0);
}

// ---------------------------------------------------------------- Transpose

template <typename T>
Tensor naiveTranspose(const Tensor& in, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) out_shape[k] = in.shape()[static_cast<size_t>(perm[k])];
  Tensor out(in.dtype(), out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto oi = unravel(i, out_shape);
    std::vector<int64_t> ii(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) ii[static_cast<size_t>(perm[k])] = oi[k];
    out.data<T>()[i] = in.data<T>()[ravel(ii, in.shape())];
  }
  return out;
}

template <typename T>
void checkAllPermutations(const Shape& shape) {
  std::vector<int64_t> perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  const Tensor x = iota<T>(shape);
  do {
    OneNode t;
    t.in(x);
    t.make("Transpose").attrs().set("perm", perm);
    EXPECT_TRUE(t.run1().bitwiseEqual(naiveTranspose<T>(x, perm)))
        << "perm " << shapeStr(perm) << " shape " << shapeStr(shape) << " " << dtypeName(x.dtype());
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(DmTranspose, AllPermutationsOf4DMatchNaive) {
  checkAllPermutations<float>({2, 3, 4, 5});
  checkAllPermutations<int64_t>({3, 1, 2, 4});
  checkAllPermutations<uint8_t>({2, 5, 3, 2});
  checkAllPermutations<int16_t>({4, 2, 2, 3});
}

TEST(DmTranspose, LargeTiledAndFoldedCases) {
  // Sizes beyond one tile, NHWC<->NCHW with C = 2, 3, 4 (folded and unfolded pixels), and the
  // attention [B,S,H,D] -> [B,H,S,D] move with a contiguous inner block.
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {{{2, 33, 47}, {0, 2, 1}},
                                                                     {{1, 2, 19, 21}, {0, 2, 3, 1}},
                                                                     {{1, 3, 19, 21}, {0, 2, 3, 1}},
                                                                     {{1, 4, 19, 21}, {0, 2, 3, 1}},
                                                                     {{1, 17, 9, 3}, {0, 3, 1, 2}},
                                                                     {{2, 7, 3, 8}, {0, 2, 1, 3}},
                                                                     {{70, 65}, {1, 0}},
                                                                     {{3, 1, 5, 1, 2}, {4, 3, 2, 1, 0}}};
  for (const auto& [shape, perm] : cases) {
    const Tensor x = randomFloat(shape, 7);
    OneNode t;
    t.in(x);
    t.make("Transpose").attrs().set("perm", perm);
    EXPECT_TRUE(t.run1().bitwiseEqual(naiveTranspose<float>(x, perm)))
        << shapeStr(shape) << " " << shapeStr(perm);
  }
}

TEST(DmTranspose, DefaultPermReversesAndBadPermIsNamed) {
  const Tensor x = iota<int32_t>({2, 3, 4});
  OneNode t;
  t.in(x);
  t.make("Transpose");
  EXPECT_TRUE(t.run1().bitwiseEqual(naiveTranspose<int32_t>(x, {2, 1, 0})));
  OneNode bad;
  bad.in(x);
  bad.make("Transpose").attrs().set("perm", std::vector<int64_t>{0, 0, 1});
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "is not a permutation");
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

TEST(DmDepthToSpace, DcrAndCrdMatchSpecFormulas) {
  const int64_t n = 2, c = 8, h = 3, w = 2, bs = 2, oc = c / (bs * bs);
  const Tensor x = iota<float>({n, c, h, w});
  for (const std::string mode : {"DCR", "CRD"}) {
    OneNode t;
    t.in(x);
    Node& node = t.make("DepthToSpace");
    node.attrs().set("blocksize", bs);
    node.attrs().set("mode", mode);
    Tensor out = t.run1();
    ASSERT_EQ(out.shape(), (Shape{n, oc, h * bs, w * bs}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < oc; ++k)
        for (int64_t y = 0; y < h * bs; ++y)
          for (int64_t xx = 0; xx < w * bs; ++xx) {
            const int64_t i = y % bs, j = xx % bs;
            const int64_t src_c = mode == "DCR" ? (i * bs + j) * oc + k : k * bs * bs + i * bs + j;
            const float want = x.data<float>()[((b * c + src_c) * h + y / bs) * w + xx / bs];
            ASSERT_EQ(out.data<float>()[((b * oc + k) * h * bs + y) * w * bs + xx], want) << mode;
          }
  }
}

TEST(DmDepthToSpace, SpaceToDepthInvertsDcr) {
  const Tensor x = randomFloat({1, 3, 4, 6}, 3);
  OneNode s2d;
  s2d.in(x);
  s2d.make("SpaceToDepth").attrs().set("blocksize", int64_t{2});
  Tensor mid = s2d.run1();
  EXPECT_EQ(mid.shape(), (Shape{1, 12, 2, 3}));
  OneNode d2s;
  d2s.in(mid);
  d2s.make("DepthToSpace").attrs().set("blocksize", int64_t{2});
  EXPECT_TRUE(d2s.run1().bitwiseEqual(x));

  OneNode bad;
  bad.in(x);
  bad.make("SpaceToDepth").attrs().set("blocksize", int64_t{4});
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "not divisible by blocksize 4");
}

// ---------------------------------------------------------------- Concat / Split

TEST(DmConcat, NegativeAxisThreeInputs) {
  OneNode t;
  t.in(iota<int64_t>({2, 1}))
      .in(tensorOf<int64_t>({2, 2}, {10, 11, 12, 13}))
      .in(tensorOf<int64_t>({2, 0}, {}));
  t.make("Concat").attrs().set("axis", int64_t{-1});
  Tensor out = t.run1();
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{0, 10, 11, 1, 12, 13}));
}

TEST(DmConcat, MismatchedDimIsNamed) {
  OneNode t;
  t.in(iota<float>({2, 16})).in(iota<float>({3, 16})).in(iota<float>({2, 8}));
  t.make("Concat").attrs().set("axis", int64_t{0});
  expectThrowWith<ShapeError>([&] { t.infer(); }, "Concat inputs 0 and 2 differ on axis 1: 16 vs 8");
}

TEST(DmSplit, SplitInputEqualAndNumOutputs) {
  {
    OneNode t;
    t.in(iota<float>({2, 6})).cst(i64({1, 2, 3}));
    t.make("Split", 3).attrs().set("axis", int64_t{1});
    auto outs = t.run();
    EXPECT_EQ(values<float>(outs[0]), (std::vector<float>{0, 6}));
    EXPECT_EQ(values<float>(outs[1]), (std::vector<float>{1, 2, 7, 8}));
    EXPECT_EQ(values<float>(outs[2]), (std::vector<float>{3, 4, 5, 9, 10, 11}));
  }
  {
    OneNode t;
    t.in(iota<int32_t>({6}));
    t.make("Split", 2);
    auto outs = t.run();
    EXPECT_EQ(values<int32_t>(outs[1]), (std::vector<int32_t>{3, 4, 5}));
  }
  {
    OneNode t;  // opset-18 num_outputs: ceil-sized pieces, last one smaller
    t.in(iota<int32_t>({7}));
    t.make("Split", 3).attrs().set("num_outputs", int64_t{3});
    auto outs = t.run();
    EXPECT_EQ(outs[0].shape(), (Shape{3}));
    EXPECT_EQ(outs[2].shape(), (Shape{1}));
    EXPECT_EQ(values<int32_t>(outs[2]), (std::vector<int32_t>{6}));
  }
  {
    OneNode t;
    t.in(iota<int32_t>({7}));
    t.make("Split", 2);
    expectThrowWith<ShapeError>([&] { t.infer(); }, "cannot be split into 2 equal parts");
  }
  {
    OneNode t;
    t.in(iota<int32_t>({7})).cst(i64({3, 3}));
    t.make("Split", 2);
    expectThrowWith<ShapeError>([&] { t.infer(); }, "sums to 6");
  }
}

// ---------------------------------------------------------------- Slice

// Reference: the ONNX clamping rules (negative positions count from the end; start clamps to
// [0, dim] or, stepping backwards, [0, dim-1]; end to [0, dim] or [-1, dim-1]), walked index by
// index rather than counted.
Tensor naiveSlice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                  const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const Shape& in = x.shape();
  std::vector<std::vector<int64_t>> picks(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    for (int64_t i = 0; i < in[d]; ++i) picks[d].push_back(i);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = static_cast<size_t>(axes[k] < 0 ? axes[k] + static_cast<int64_t>(in.size()) : axes[k]);
    const int64_t dim = in[a], step = steps[k];
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    const int64_t hi = step > 0 ? dim : dim - 1;
    s = std::min(std::max(s, int64_t{0}), hi);
    e = std::min(std::max(e, step > 0 ? int64_t{0} : int64_t{-1}), hi);
    picks[a].clear();
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) picks[a].push_back(i);
  }
  Shape out_shape;
  for (auto& p : picks) out_shape.push_back(static_cast<int64_t>(p.size()));
  Tensor out(DType::Float32, out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto oi = unravel(i, out_shape);
    for (size_t d = 0; d < oi.size(); ++d) oi[d] = picks[d][static_cast<size_t>(oi[d])];
    out.data<float>()[i] = x.data<float>()[ravel(oi, in)];
  }
  return out;
}

TEST(DmSlice, RandomParametersMatchNaive) {
  const Tensor x = iota<float>({5, 6, 7});
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> pos(-9, 9), step(-3, 3), axis(-3, 2);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> axes{axis(rng)};
    const int64_t other = (axes[0] + 4) % 3;  // a second, different axis
    if (trial % 2) axes.push_back(other);
    std::vector<int64_t> starts, ends, steps;
    for (size_t k = 0; k < axes.size(); ++k) {
      starts.push_back(pos(rng));
      ends.push_back(pos(rng));
      int64_t s = step(rng);
      steps.push_back(s == 0 ? 1 : s);
    }
    OneNode t;
    t.in(x).cst(i64(starts)).cst(i64(ends)).cst(i64(axes)).cst(i64(steps));
    t.make("Slice");
    const Tensor want = naiveSlice(x, starts, ends, axes, steps);
    const Tensor got = t.run1();
    ASSERT_TRUE(got.bitwiseEqual(want))
        << "starts " << shapeStr(starts) << " ends " << shapeStr(ends) << " axes " << shapeStr(axes)
        << " steps " << shapeStr(steps) << " got " << shapeStr(got.shape()) << " want "
        << shapeStr(want.shape());
  }
}

TEST(DmSlice, Int64SentinelsAndDefaults) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  {
    OneNode t;  // x[1:] on every axis, default axes and steps
    t.in(iota<int64_t>({3, 3})).cst(i64({1, 1})).cst(i64({kMax, kMax}));
    t.make("Slice");
    EXPECT_EQ(values<int64_t>(t.run1()), (std::vector<int64_t>{4, 5, 7, 8}));
  }
  {
    OneNode t;  // x[::-1] on axis 0
    t.in(iota<int64_t>({4})).cst(i64({-1})).cst(i64({kMin})).cst(i64({0})).cst(i64({-1}));
    t.make("Slice");
    EXPECT_EQ(values<int64_t>(t.run1()), (std::vector<int64_t>{3, 2, 1, 0}));
  }
  {
    OneNode t;
    t.in(iota<float>({4})).cst(i64({0})).cst(i64({2})).none().cst(i64({0}));
    t.make("Slice");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "step on axis 0 is 0");
  }
}

// ---------------------------------------------------------------- Gather / GatherElements

TEST(DmGather, NegativeIndicesAxis1And2DIndices) {
  const Tensor x = iota<float>({2, 4, 3});
  OneNode t;
  t.in(x).in(tensorOf<int64_t>({2, 2}, {0, -1, 2, 1}));
  t.make("Gather").attrs().set("axis", int64_t{1});
  Tensor out = t.run1();
  ASSERT_EQ(out.shape(), (Shape{2, 2, 2, 3}));
  const int64_t picks[4] = {0, 3, 2, 1};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(out.data<float>()[(b * 4 + j) * 3 + k], x.data<float>()[(b * 4 + picks[j]) * 3 + k]);

  OneNode oob;
  oob.in(x).in(tensorOf<int32_t>({1}, {4}));
  oob.make("Gather").attrs().set("axis", int64_t{1});
  expectThrowWith<InputError>([&] { oob.run(); }, "index 4 is out of range");
}

TEST(DmGather, ScalarIndexOfShapeVector) {
  OneNode t;
  t.cst(i64({1, 3, 224, 224})).cst(Tensor::scalar<int64_t>(-2));
  t.make("Gather");
  Tensor out = t.run1();
  EXPECT_EQ(out.shape(), Shape{});
  EXPECT_EQ(out.data<int64_t>()[0], 224);
}

TEST(DmGatherElements, Axis0And1WithNegativeIndices) {
  const Tensor x = tensorOf<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  {
    OneNode t;
    t.in(x).in(tensorOf<int64_t>({2, 3}, {1, 2, 0, 2, 0, -3}));
    t.make("GatherElements");
    EXPECT_EQ(values<float>(t.run1()), (std::vector<float>{4, 8, 3, 7, 2, 3}));
  }
  {
    OneNode t;
    t.in(x).in(tensorOf<int32_t>({3, 2}, {0, 0, 1, -1, 2, 1}));
    t.make("GatherElements").attrs().set("axis", int64_t{1});
    EXPECT_EQ(values<float>(t.run1()), (std::vector<float>{1, 1, 5, 6, 9, 8}));
  }
}

// ---------------------------------------------------------------- Pad

// Reference: bounce off the edges one step at a time (reflect), clamp (edge), modulo (wrap).
int64_t refPadIndex(int64_t x, int64_t dim, const std::string& mode) {
  if (x >= 0 && x < dim) return x;
  if (mode == "constant") return -1;
  if (mode == "edge") return x < 0 ? 0 : dim - 1;
  if (mode == "wrap") {
    while (x < 0) x += dim;
    return x % dim;
  }
  while (x < 0 || x >= dim) x = x < 0 ? -x : 2 * (dim - 1) - x;
  return x;
}

TEST(DmPad, AllModesMatchReference) {
  const Tensor x = randomFloat({2, 3, 4}, 5);
  const std::vector<int64_t> pads{0, 2, -1, 1, 1, 3};  // begins, then ends; one crop
  for (const std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    OneNode t;
    t.in(x).cst(i64(pads)).cst(Tensor::scalar<float>(9.5f));
    t.make("Pad").attrs().set("mode", mode);
    Tensor out = t.run1();
    const Shape want_shape{3, 6, 6};
    ASSERT_EQ(out.shape(), want_shape) << mode;
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto oi = unravel(i, want_shape);
      bool pad = false;
      for (size_t d = 0; d < 3; ++d) {
        oi[d] = refPadIndex(oi[d] - pads[d], x.shape()[d], mode);
        pad = pad || oi[d] < 0;
      }
      const float want = pad ? 9.5f : x.data<float>()[ravel(oi, x.shape())];
      ASSERT_EQ(out.data<float>()[i], want) << mode << " at " << shapeStr(unravel(i, want_shape));
    }
  }
}

TEST(DmPad, AxesInputAndIntData) {
  OneNode t;
  t.in(iota<int64_t>({2, 2})).cst(i64({1, 2})).cst(Tensor::scalar<int64_t>(-7)).cst(i64({-1}));
  t.make("Pad");
  Tensor out = t.run1();
  EXPECT_EQ(out.shape(), (Shape{2, 5}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{-7, 0, 1, -7, -7, -7, 2, 3, -7, -7}));

  OneNode bad;
  bad.in(iota<float>({2, 2})).cst(i64({1, 2}));
  bad.make("Pad");
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "must have 2 x 2 entries");
}

// ---------------------------------------------------------------- Tile / Expand

TEST(DmTileExpand, TileMatchesModuloIndexing) {
  const Tensor x = iota<int16_t>({2, 3});
  OneNode t;
  t.in(x).cst(i64({3, 2}));
  t.make("Tile");
  Tensor out = t.run1();
  ASSERT_EQ(out.shape(), (Shape{6, 6}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ(out.data<int16_t>()[r * 6 + c], x.data<int16_t>()[(r % 2) * 3 + c % 3]);
}

TEST(DmTileExpand, ExpandIsBidirectional) {
  const Tensor x = tensorOf<float>({3, 1}, {1, 2, 3});
  OneNode t;
  t.in(x).cst(i64({2, 1, 4}));
  t.make("Expand");
  Tensor out = t.run1();
  ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < out.numel(); ++i)
    EXPECT_EQ(out.data<float>()[i], static_cast<float>((i / 4) % 3 + 1));

  OneNode bad;
  bad.in(x).cst(i64({2, 5}));
  bad.make("Expand");
  expectThrowWith<ShapeError>([&] { bad.infer(); }, "cannot be broadcast");
}

// ---------------------------------------------------------------- Shape / Size / generators

TEST(DmGenerate, ShapeStartEndAndSize) {
  const Tensor x(DType::Float32, {2, 3, 5, 7});
  const std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>> cases = {
      {0, 4, {2, 3, 5, 7}}, {1, -1, {3, 5}}, {-10, 2, {2, 3}}, {3, 1, {}}, {-1, 100, {7}}};
  for (const auto& [start, end, want] : cases) {
    OneNode t;
    t.in(x);
    Node& n = t.make("Shape");
    n.attrs().set("start", start);
    n.attrs().set("end", end);
    Tensor out = t.run1();
    EXPECT_EQ(out.dtype(), DType::Int64);
    EXPECT_EQ(values<int64_t>(out), want) << start << ":" << end;
  }
  OneNode s;
  s.in(x);
  s.make("Size");
  Tensor n = s.run1();
  EXPECT_EQ(n.shape(), Shape{});
  EXPECT_EQ(n.data<int64_t>()[0], 210);
}

TEST(DmGenerate, ConstantOfShapeRangeConstant) {
  {
    OneNode t;
    t.cst(i64({2, 3}));
    t.make("ConstantOfShape").attrs().set("value", Tensor::fromVector<int32_t>({-4}, {1}));
    Tensor out = t.run1();
    EXPECT_EQ(out.dtype(), DType::Int32);
    EXPECT_EQ(values<int32_t>(out), std::vector<int32_t>(6, -4));
  }
  {
    OneNode t;  // default: float zeros; an empty shape gives a scalar
    t.cst(Tensor(DType::Int64, {0}));
    t.make("ConstantOfShape");
    Tensor out = t.run1();
    EXPECT_EQ(out.dtype(), DType::Float32);
    EXPECT_EQ(out.shape(), Shape{});
  }
  {
    OneNode t;
    t.cst(Tensor::scalar<int32_t>(10)).cst(Tensor::scalar<int32_t>(1)).cst(Tensor::scalar<int32_t>(-3));
    t.make("Range");
    EXPECT_EQ(values<int32_t>(t.run1()), (std::vector<int32_t>{10, 7, 4}));
  }
  {
    OneNode t;
    t.cst(Tensor::scalar<float>(0.5f)).cst(Tensor::scalar<float>(2.0f)).cst(Tensor::scalar<float>(0.5f));
    t.make("Range");
    EXPECT_EQ(values<float>(t.run1()), (std::vector<float>{0.5f, 1.0f, 1.5f}));
  }
  {
    OneNode t;
    t.cst(Tensor::scalar<int64_t>(0)).cst(Tensor::scalar<int64_t>(5)).cst(Tensor::scalar<int64_t>(0));
    t.make("Range");
    expectThrowWith<ShapeError>([&] { t.infer(); }, "delta is 0");
  }
  {
    OneNode t;
    t.make("Constant").attrs().set("value_ints", std::vector<int64_t>{4, 5});
    Tensor out = t.run1();
    EXPECT_EQ(out.dtype(), DType::Int64);
    EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{4, 5}));
  }
  {
    OneNode t;
    t.make("Constant").attrs().set("value", iota<float>({2, 2}));
    EXPECT_TRUE(t.run1().bitwiseEqual(iota<float>({2, 2})));
  }
}

// The PyTorch-export shape sub-graph: x.view(x.size(0), -1) as Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, all in exact int64.
TEST(DmGenerate, ShapeSubgraphEvaluatesExactly) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {3, 4, 5});
  Node* shape = g.appendNode("Shape", {x}, 1);
  Node* gather = g.appendNode("Gather", {shape->output(), g.addConstant(Tensor::scalar<int64_t>(0))}, 1);
  Node* unsq = g.appendNode("Unsqueeze", {gather->output(), g.addConstant(i64({0}))}, 1);
  Node* cat = g.appendNode("Concat", {unsq->output(), g.addConstant(i64({-1}))}, 1);
  cat->attrs().set("axis", int64_t{0});
  for (Node* n : {shape, gather, unsq, cat}) inferNode(*n);
  EXPECT_EQ(cat->output()->shape(), Shape{2});
  Node* reshape = g.appendNode("Reshape", {x, cat->output()}, 1);
  g.addOutput(cat->output());
  g.addOutput(reshape->output());
  reshape->output()->setType(DType::Float32, {3, 20});  // what folding the shape would give
  const Tensor xv = iota<float>({3, 4, 5});
  auto outs = evalGraph(g, {{"x", xv}});
  EXPECT_EQ(values<int64_t>(outs[0]), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(outs[1].shape(), (Shape{3, 20}));
  EXPECT_EQ(values<float>(outs[1]), values<float>(xv));
}

// ---------------------------------------------------------------- Resize

Node& makeResize(OneNode& t, const Tensor& x, const Tensor* scales, const Tensor* sizes,
                 const std::string& mode, const std::string& coord) {
  t.in(x).cst(Tensor(DType::Float32, {0}));
  if (scales) {
    t.cst(*scales);
  } else {
    t.cst(Tensor(DType::Float32, {0}));
  }
  if (sizes) t.cst(*sizes);
  Node& n = t.make("Resize");
  n.attrs().set("mode", mode);
  n.attrs().set("coordinate_transformation_mode", coord);
  return n;
}

void expectNear(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data<float>()[i], want[i], tol) << "at " << i;
}

TEST(DmResize, NearestAsymmetricUpsample) {
  const Tensor x = tensorOf<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = f32s({1, 1, 2, 3});
  OneNode t;
  makeResize(t, x, &scales, nullptr, "nearest", "asymmetric")
      .attrs()
      .set("nearest_mode", std::string("floor"));
  Tensor out = t.run1();
  EXPECT_EQ(out.shape(), (Shape{1, 1, 4, 6}));
  expectNear(out, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(DmResize, NearestWorksOnInt8) {
  const Tensor x = tensorOf<int8_t>({1, 1, 1, 3}, {-5, 0, 7});
  const Tensor sizes = i64({1, 1, 2, 6});
  OneNode t;
  makeResize(t, x, nullptr, &sizes, "nearest", "half_pixel");
  EXPECT_EQ(values<int8_t>(t.run1()), (std::vector<int8_t>{-5, -5, 0, 0, 7, 7, -5, -5, 0, 0, 7, 7}));
}

TEST(DmResize, NearestExtrapolationIsCastToTheDtype) {
  const Tensor x = iota<int32_t>({1, 1, 3, 3});
  OneNode t;
  t.in(x).cst(f32s({0, 0, 0, 0, 1, 1, 1, 2})).cst(Tensor(DType::Float32, {0})).cst(i64({1, 1, 3, 3}));
  Node& n = t.make("Resize");
  n.attrs().set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  n.attrs().set("extrapolation_value", 10.7f);
  // Columns map to 0, 2 and 4 (outside: extrapolated); rows to 0, 1, 2.
  EXPECT_EQ(values<int32_t>(t.run1()), (std::vector<int32_t>{0, 2, 10, 3, 5, 10, 6, 8, 10}));
}

TEST(DmResize, UnsupportedModeNamesTheNode) {
  OneNode t;
  t.in(iota<float>({1, 4})).cst(Tensor(DType::Float32, {0})).cst(f32s({1, 2}));
  t.make("Resize").attrs().set("mode", std::string("area"));
  expectThrowWith<UnsupportedOpError>([&] { t.infer(); }, "node 'Resize_node' (Resize): resize mode 'area'");
  OneNode lin;
  lin.in(iota<int8_t>({1, 4})).cst(Tensor(DType::Float32, {0})).cst(f32s({1, 2}));
  lin.make("Resize").attrs().set("mode", std::string("linear"));
  expectThrowWith<UnsupportedOpError>([&] { lin.infer(); }, "supports float32 input, got int8");
}

TEST(DmResize, BilinearHalfPixelAndAlignCorners) {
  const Tensor x = tensorOf<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = f32s({1, 1, 2, 2});
  {
    OneNode t;
    makeResize(t, x, &scales, nullptr, "linear", "half_pixel");
    expectNear(t.run1(), {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  }
  {
    OneNode t;
    makeResize(t, x, &scales, nullptr, "linear", "align_corners");
    const float a = 1.0f / 3, b = 2.0f / 3;
    expectNear(t.run1(), {1, 1 + a, 1 + b, 2, 1 + 2 * a, 1 + 3 * a, 1 + 4 * a, 2 + 2 * a, 1 + 4 * a,
                          2 + 2 * a, 2 + 3 * a, 3 + a, 3, 3 + a, 3 + b, 4});
  }
}

// A direct N-D reference: per output element, a sum over the product of 1-D linear weights
// computed from the spec formulas (no separable passes, no tap tables).
float linearWeight1D(float c, int64_t len, int64_t i) {
  c = std::min(std::max(c, 0.0f), static_cast<float>(len - 1));
  const float d = std::fabs(c - static_cast<float>(i));
  return d < 1.0f ? 1.0f - d : 0.0f;
}

TEST(DmResize, LinearNdMatchesDirectReference) {
  // Three resized axes run the general separable passes; two (H, W) run the fused 2-D path.
  const Tensor x = randomFloat({2, 3, 4, 5}, 9);
  for (const Shape os : {Shape{2, 5, 3, 8}, Shape{2, 3, 9, 3}}) {
    for (const std::string coord : {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}) {
      OneNode t;
      const Tensor sizes = i64(os);
      makeResize(t, x, nullptr, &sizes, "linear", coord);
      Tensor out = t.run1();
      ASSERT_EQ(out.shape(), os);
      for (int64_t i = 0; i < out.numel(); ++i) {
        const auto oi = unravel(i, os);
        std::vector<float> c(4);
        for (size_t d = 0; d < 4; ++d) {
          const float in_len = static_cast<float>(x.shape()[d]), out_len = static_cast<float>(os[d]);
          const float scale = out_len / in_len, xo = static_cast<float>(oi[d]);
          if (coord == "half_pixel") c[d] = (xo + 0.5f) / scale - 0.5f;
          if (coord == "pytorch_half_pixel") c[d] = out_len > 1 ? (xo + 0.5f) / scale - 0.5f : 0.0f;
          if (coord == "asymmetric") c[d] = xo / scale;
          if (coord == "align_corners") c[d] = out_len > 1 ? xo * (in_len - 1) / (out_len - 1) : 0.0f;
        }
        double want = 0;
        for (int64_t j = 0; j < x.numel(); ++j) {
          const auto ii = unravel(j, x.shape());
          double w = 1;
          for (size_t d = 0; d < 4 && w != 0; ++d) w *= linearWeight1D(c[d], x.shape()[d], ii[d]);
          want += w * x.data<float>()[j];
        }
        ASSERT_NEAR(out.data<float>()[i], want, 1e-4) << coord << " at " << shapeStr(oi);
      }
    }
  }
}

TEST(DmResize, CubicOnConstantRowIsExactAndExcludeOutsideRenormalizes) {
  // Cubic weights sum to 1, so a constant input stays constant whatever the coordinates.
  Tensor x(DType::Float32, {1, 1, 3, 4});
  std::fill(x.data<float>(), x.data<float>() + x.numel(), 2.5f);
  const Tensor scales = f32s({1, 1, 1.7f, 0.6f});
  for (int64_t exclude : {0, 1}) {
    OneNode t;
    makeResize(t, x, &scales, nullptr, "cubic", "half_pixel").attrs().set("exclude_outside", exclude);
    Tensor out = t.run1();
    EXPECT_EQ(out.shape(), (Shape{1, 1, 5, 2}));
    for (int64_t i = 0; i < out.numel(); ++i) EXPECT_NEAR(out.data<float>()[i], 2.5f, 1e-5f);
  }
  // On a ramp, Keys' cubic (any A) reproduces linear functions exactly away from the edges.
  const Tensor ramp = tensorOf<float>({1, 8}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor s2 = f32s({1, 2});
  OneNode t;
  makeResize(t, ramp, &s2, nullptr, "cubic", "asymmetric");
  Tensor out = t.run1();
  for (int64_t i = 2; i < 12; ++i) EXPECT_NEAR(out.data<float>()[i], 0.5f * i, 1e-5f) << i;
}

TEST(DmResize, TfCropAndResizeExtrapolates) {
  const Tensor x = iota<float>({1, 1, 3, 3});
  OneNode t;
  t.in(x)
      .cst(f32s({0, 0, 0.5f, 0.5f, 1, 1, 1.5f, 1.5f}))
      .cst(Tensor(DType::Float32, {0}))
      .cst(i64({1, 1, 2, 2}));
  Node& n = t.make("Resize");
  n.attrs().set("mode", std::string("linear"));
  n.attrs().set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  n.attrs().set("extrapolation_value", 10.0f);
  // Rows/cols map to 1.0 and 3.0 (outside): only (1,1) is inside.
  expectNear(t.run1(), {4, 10, 10, 10});
}

TEST(DmResize, UpsampleIsAsymmetricNearest) {
  const Tensor x = tensorOf<float>({1, 1, 1, 2}, {1, 2});
  OneNode t;
  t.in(x).cst(f32s({1, 1, 2, 2}));
  t.make("Upsample");
  expectNear(t.run1(), {1, 1, 2, 2, 1, 1, 2, 2});
}

TEST(DmResize, MissingScalesAndSizesIsNamed) {
  OneNode t;
  t.in(iota<float>({1, 2})).cst(Tensor(DType::Float32, {0})).cst(Tensor(DType::Float32, {0}));
  t.make("Resize");
  expectThrowWith<ShapeError>([&] { t.infer(); }, "non-empty scales or sizes");
}

}  // namespace
}  // namespace npuc
