// The scatter / gather / indexing family (opset/ops/scatter_*.cpp): kernels against small loops
// written here, edge cases (negative indices, duplicates under each reduction, empty lengths),
// and the errors of bad input: every bad index is an InputError naming the node, the index and the
// axis; bad shapes are ShapeErrors naming the op and the shapes. Then the scatter_nd_to_concat
// pass: rewrites, refusals and a differential check (bit-exact) of each rewrite.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "opset/eval.h"
#include "opset/registry.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::GraphBuilder;
using passtest::runPassChecked;

Tensor floats(const std::vector<float>& v, const Shape& s) {
  return Tensor::fromVector(v, s);
}
Tensor i64(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::fromVector(v, s);
}
Tensor iota(const Shape& s, float from = 0.0f) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from + static_cast<float>(i);
  return t;
}
std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// One node over runtime inputs (`in`) and constants (`cst`), named "<op>_node".
struct One {
  Graph g;
  std::vector<Value*> ins;
  std::vector<Tensor> held;
  std::vector<const Tensor*> feeds;
  Node* node = nullptr;
  One() { held.reserve(8); }
  One& in(const Tensor& t) {
    held.push_back(t);
    ins.push_back(g.addInput("in" + std::to_string(ins.size()), t.dtype(), t.shape()));
    feeds.push_back(&held.back());
    return *this;
  }
  One& cst(const Tensor& t) {
    Value* v = g.addConstant(t);
    ins.push_back(v);
    feeds.push_back(&v->constant());
    return *this;
  }
  Node& make(const std::string& op, const Attributes& a = {}) {
    node = g.appendNode(op, ins, 1, op + "_node");
    node->attrs() = a;
    return *node;
  }
  Tensor run(const std::string& op, const Attributes& a = {}) {
    make(op, a);
    inferNode(*node);
    return evalNode(*node, feeds).at(0);
  }
};

Attributes attrs(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  return passtest::attrs(kv);
}

// EXPECT that `f` throws E whose message contains every fragment.
template <typename E, typename F>
void expectThrows(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const auto& frag : fragments) EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- registration

TEST(ScatterOps, EveryOpHasAnNpuDecisionAndAnInt8Rule) {
  for (const char* op : {"GatherND", "ScatterND", "ScatterElements", "Scatter", "OneHot", "EyeLike", "ReverseSequence",
                         "MaxUnpool"}) {
    const OpSchema* s = OpRegistry::instance().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_NE(s->traits.quant_class, QuantClass::Unset) << op;
    EXPECT_FALSE(s->traits.cpu_reason.empty()) << op;
  }
  // Copies keep input 0's int8 parameters; scatters (updates on another grid) stay FP16.
  EXPECT_EQ(OpRegistry::instance().find("GatherND")->traits.quant_class, QuantClass::DataMovement);
  EXPECT_EQ(OpRegistry::instance().find("ScatterND")->traits.quant_class, QuantClass::Float);
}

// ---------------------------------------------------------------- GatherND

TEST(ScatterOps, GatherNdBatchDimsAndNegativeIndices) {
  // data [2, 3, 4]; per batch, pick rows (k = 1) 2 and -3 (= 0).
  One n;
  n.in(iota({2, 3, 4})).in(i64({2, -3, -1, 1}, {2, 2, 1}));
  const Tensor y = n.run("GatherND", attrs({{"batch_dims", int64_t{1}}}));
  ASSERT_EQ(y.shape(), (Shape{2, 2, 4}));
  std::vector<float> want;
  const int64_t rows[2][2] = {{2, 0}, {2, 1}};
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 2; ++j)
      for (int c = 0; c < 4; ++c) want.push_back(static_cast<float>(b * 12 + rows[b][j] * 4 + c));
  EXPECT_EQ(values(y), want);
}

TEST(ScatterOps, GatherNdFullCoordinatesGiveScalars) {
  One n;
  n.in(iota({3, 4})).in(i64({2, 3, 0, -1}, {2, 2}));
  const Tensor y = n.run("GatherND");
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(values(y), (std::vector<float>{11, 3}));
}

TEST(ScatterOps, GatherNdOutOfRangeIndexNamesNodeIndexAndAxis) {
  One n;
  n.in(iota({3, 4})).in(i64({1, 4}, {1, 2}));
  expectThrows<InputError>([&] { n.run("GatherND"); }, {"GatherND_node", "index 4", "axis 1 of size 4"});
}

TEST(ScatterOps, GatherNdBadShapes) {
  One n;
  n.in(iota({3, 4})).in(i64({0, 0, 0}, {1, 3}));
  expectThrows<ShapeError>([&] { n.run("GatherND"); }, {"GatherND_node", "[1,3]", "[3,4]"});
  One b;
  b.in(iota({2, 4})).in(i64({0, 0, 0}, {3, 1}));
  expectThrows<ShapeError>([&] { b.run("GatherND", attrs({{"batch_dims", int64_t{1}}})); }, {"batch dim 0"});
}

// ---------------------------------------------------------------- ScatterND

TEST(ScatterOps, ScatterNdReductionsCombineDuplicates) {
  // data [3, 2]; rows 1, -2 (= 1) and 0 updated.
  const Tensor idx = i64({1, -2, 0}, {3, 1});
  const Tensor upd = floats({2, 3, 4, 5, 6, 7}, {3, 2});
  struct Case {
    const char* reduction;
    std::vector<float> want;
  };
  // data rows: [1, 1], [10, -10], [0, 0].
  const std::vector<Case> cases = {{"add", {7, 8, 16, -2, 0, 0}},
                                   {"mul", {6, 7, 80, -150, 0, 0}},
                                   {"max", {6, 7, 10, 5, 0, 0}},
                                   {"min", {1, 1, 2, -10, 0, 0}},
                                   {"none", {6, 7, 4, 5, 0, 0}}};  // last write wins, as ORT does
  for (const Case& c : cases) {
    One n;
    n.in(floats({1, 1, 10, -10, 0, 0}, {3, 2})).cst(idx).in(upd);
    EXPECT_EQ(values(n.run("ScatterND", attrs({{"reduction", std::string(c.reduction)}}))), c.want) << c.reduction;
  }
}

TEST(ScatterOps, ScatterNdIntegerDataAndInt32Indices) {
  One n;
  n.in(Tensor::fromVector<int64_t>({1, 2, 3, 4}, {4})).in(Tensor::fromVector<int32_t>({-1, 0}, {2, 1}))
      .in(Tensor::fromVector<int64_t>({40, 10}, {2}));
  const Tensor y = n.run("ScatterND", attrs({{"reduction", std::string("add")}}));
  EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 4), (std::vector<int64_t>{11, 2, 3, 44}));
}

TEST(ScatterOps, ScatterNdOutOfRangeIndexIsRefusedBeforeAnyWrite) {
  One n;
  n.in(iota({3, 2})).in(i64({0, 3}, {2, 1})).in(iota({2, 2}));
  expectThrows<InputError>([&] { n.run("ScatterND"); }, {"ScatterND_node", "index 3", "element 1", "axis 0 of size 3"});
  One neg;
  neg.in(iota({3, 2})).in(i64({-4}, {1, 1})).in(iota({1, 2}));
  expectThrows<InputError>([&] { neg.run("ScatterND"); }, {"index -4"});
}

TEST(ScatterOps, ScatterNdBadShapesAndReduction) {
  One n;
  n.in(iota({3, 2})).in(i64({0, 1}, {2, 1})).in(iota({2, 3}));
  expectThrows<ShapeError>([&] { n.run("ScatterND"); }, {"ScatterND_node", "updates [2,3]", "[2,2]"});
  One r;
  r.in(iota({3, 2})).in(i64({0}, {1, 1})).in(iota({1, 2}));
  expectThrows<UnsupportedOpError>([&] { r.run("ScatterND", attrs({{"reduction", std::string("sub")}})); },
                                   {"reduction 'sub'"});
}

// ---------------------------------------------------------------- ScatterElements / Scatter

TEST(ScatterOps, ScatterElementsAxis1NegativeIndicesAndMax) {
  // data [2, 3]; indices [2, 2] on axis 1.
  for (const char* op : {"ScatterElements", "Scatter"}) {
    One n;
    n.in(floats({0, 0, 0, 5, 5, 5}, {2, 3})).in(i64({-1, 0, 1, 1}, {2, 2})).in(floats({1, 2, 3, 9}, {2, 2}));
    EXPECT_EQ(values(n.run(op, attrs({{"axis", int64_t{1}}}))), (std::vector<float>{2, 0, 1, 5, 9, 5})) << op;
  }
  One m;
  m.in(floats({0, 0, 0, 5, 5, 5}, {2, 3})).in(i64({-1, 0, 1, 1}, {2, 2})).in(floats({1, 2, 3, 9}, {2, 2}));
  const Tensor y = m.run("ScatterElements", attrs({{"axis", int64_t{1}}, {"reduction", std::string("max")}}));
  EXPECT_EQ(values(y), (std::vector<float>{2, 0, 1, 5, 9, 5}));
}

TEST(ScatterOps, ScatterElementsErrors) {
  One n;
  n.in(iota({2, 3})).in(i64({0, 3}, {1, 2})).in(iota({1, 2}));
  expectThrows<InputError>([&] { n.run("ScatterElements", attrs({{"axis", int64_t{1}}})); },
                           {"ScatterElements_node", "index 3", "axis 1 of size 3"});
  One r;
  r.in(iota({2, 3})).in(i64({0, 1}, {2})).in(iota({2}));
  expectThrows<ShapeError>([&] { r.run("ScatterElements"); }, {"ScatterElements_node", "rank of data [2,3]"});
  One u;
  u.in(iota({2, 3})).in(i64({0, 1}, {1, 2})).in(iota({2, 1}));
  expectThrows<ShapeError>([&] { u.run("ScatterElements"); }, {"updates [2,1]"});
}

// ---------------------------------------------------------------- OneHot / EyeLike

TEST(ScatterOps, OneHotOutOfRangeRowsStayOff) {
  One n;
  n.in(i64({1, -1, 3, -4}, {4})).cst(i64({3}, {1})).cst(floats({0, 5}, {2}));
  const Tensor y = n.run("OneHot", attrs({{"axis", int64_t{0}}}));
  ASSERT_EQ(y.shape(), (Shape{3, 4}));
  // Column j is index j's one-hot: 1 -> row 1, -1 -> row 2, 3 and -4 -> nothing.
  EXPECT_EQ(values(y), (std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0, 0}));
}

TEST(ScatterOps, OneHotNeedsAConstantPositiveDepth) {
  One n;
  n.in(i64({1}, {1})).in(i64({3}, {1})).cst(floats({0, 1}, {2}));
  expectThrows<ShapeError>([&] { n.run("OneHot"); }, {"OneHot depth", "constant"});
  One z;
  z.in(i64({1}, {1})).cst(i64({0}, {1})).cst(floats({0, 1}, {2}));
  expectThrows<ShapeError>([&] { z.run("OneHot"); }, {"depth 0"});
}

TEST(ScatterOps, EyeLikeDiagonalsAndDtype) {
  One n;
  n.in(iota({3, 4}));
  EXPECT_EQ(values(n.run("EyeLike", attrs({{"k", int64_t{-1}}}))),
            (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  One d;
  d.in(iota({2, 2}));
  const Tensor y = d.run("EyeLike", attrs({{"dtype", int64_t{7}}}));  // int64
  ASSERT_EQ(y.dtype(), DType::Int64);
  EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 4), (std::vector<int64_t>{1, 0, 0, 1}));
  One bad;
  bad.in(iota({2, 2, 2}));
  expectThrows<ShapeError>([&] { bad.run("EyeLike"); }, {"EyeLike", "2-D", "[2,2,2]"});
}

TEST(ScatterOps, EyeLikeOfARuntimeTensorFolds) {
  GraphBuilder b;
  Value* x = b.input("x", {3, 3});
  b.output(b.op("Add", {x, b.op("EyeLike", {b.op("Relu", {x})}, attrs({{"k", int64_t{1}}}))}));
  auto r = runPassChecked(b.graph(), "constant_folding", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(passtest::countOps(b.graph(), "EyeLike"), 0u);
}

// ---------------------------------------------------------------- ReverseSequence / MaxUnpool

TEST(ScatterOps, ReverseSequenceBatchMajor) {
  // [batch 2, time 3, 1]: batch 0 reverses 3 steps, batch 1 none (length 0).
  One n;
  n.in(iota({2, 3, 1})).in(i64({3, 0}, {2}));
  const Tensor y = n.run("ReverseSequence", attrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  EXPECT_EQ(values(y), (std::vector<float>{2, 1, 0, 3, 4, 5}));
}

TEST(ScatterOps, ReverseSequenceLengthBeyondTimeAxis) {
  One n;
  n.in(iota({3, 2})).in(i64({1, 4}, {2}));
  expectThrows<InputError>([&] { n.run("ReverseSequence"); }, {"ReverseSequence_node", "sequence_lens[1] = 4", "[0, 3]"});
  One s;
  s.in(iota({3, 2})).in(i64({1, 1, 1}, {3}));
  expectThrows<ShapeError>([&] { s.run("ReverseSequence"); }, {"sequence_lens [3]", "[3,2]"});
}

TEST(ScatterOps, MaxUnpoolWithAndWithoutOutputShape) {
  One n;
  n.in(floats({1, 2, 3, 4}, {1, 1, 2, 2})).in(i64({5, 7, 13, 15}, {1, 1, 2, 2}));
  const Attributes a = attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  Tensor y = n.run("MaxUnpool", a);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(values(y), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}));
  One o;
  o.in(floats({1, 2, 3, 4}, {1, 1, 2, 2})).in(i64({5, 7, 13, 24}, {1, 1, 2, 2})).cst(i64({1, 1, 5, 5}, {4}));
  y = o.run("MaxUnpool", a);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 5}));
  EXPECT_EQ(y.data<float>()[24], 4.0f);  // flat positions of the 5x5 output, as ONNX Runtime reads them
}

TEST(ScatterOps, MaxUnpoolErrors) {
  const Attributes a = attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  One n;
  n.in(floats({1, 2, 3, 4}, {1, 1, 2, 2})).in(i64({5, 7, 13, 16}, {1, 1, 2, 2}));
  expectThrows<InputError>([&] { n.run("MaxUnpool", a); }, {"MaxUnpool_node", "index 16", "element 3", "16 elements"});
  One s;
  s.in(floats({1, 2, 3, 4}, {1, 1, 2, 2})).in(i64({5, 7, 13, 15}, {1, 1, 2, 2})).cst(i64({1, 1, 3, 3}, {4}));
  expectThrows<ShapeError>([&] { s.run("MaxUnpool", a); }, {"output_shape [1,1,3,3]", "smaller"});
}

// ---------------------------------------------------------------- scatter_nd_to_concat

// Constant indices of the box [start, start + size) over the leading axes, in row-major order.
Tensor boxIndices(const std::vector<int64_t>& start, const std::vector<int64_t>& size) {
  const size_t k = start.size();
  Shape shape(size.begin(), size.end());
  shape.push_back(static_cast<int64_t>(k));
  std::vector<int64_t> v;
  std::vector<int64_t> pos(k, 0);
  int64_t count = 1;
  for (int64_t s : size) count *= s;
  for (int64_t t = 0; t < count; ++t) {
    for (size_t j = 0; j < k; ++j) v.push_back(start[j] + pos[j]);
    for (size_t j = k; j-- > 0;) {
      if (++pos[j] < size[j]) break;
      pos[j] = 0;
    }
  }
  return Tensor::fromVector(v, shape);
}

TEST(ScatterNdToConcat, YoloLastAxisAssignmentBecomesSliceConcat) {
  // y[..., 0:2] = u on [1, 3, 4, 4, 85], then y[..., 2:4] read back (the Detect head).
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 4, 85});
  Value* u = b.input("u", {1, 3, 4, 4, 2});
  Value* y = b.op("ScatterND", {x, b.constant(boxIndices({0, 0, 0, 0, 0}, {1, 3, 4, 4, 2})), u}, {}, "assign_xy");
  Value* wh = b.op("Slice", {y, b.int64s({2}), b.int64s({4}), b.int64s({4})}, {}, "read_wh");
  b.output(y);
  b.output(wh);
  auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
  EXPECT_EQ(r.changes, 2u);  // the ScatterND and the Slice that read it back
  EXPECT_EQ(passtest::countOps(b.graph(), "ScatterND"), 0u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Concat"), 1u);
  // The read-back Slice now cuts the untouched part of x (a Slice of x that merge_slices composes),
  // not the Concat.
  const Node* read = b.graph().outputs()[1]->producer();
  ASSERT_EQ(read->opType(), "Slice");
  ASSERT_EQ(read->input(0)->producer()->opType(), "Slice");
  EXPECT_EQ(read->input(0)->producer()->input(0), x);
}

TEST(ScatterNdToConcat, BoxInsideSeveralAxesAndNegativeIndices) {
  GraphBuilder b;
  Value* x = b.input("x", {4, 5, 6});
  Value* u = b.input("u", {2, 3, 6});
  Tensor idx = boxIndices({1, 2}, {2, 3});
  for (int64_t i = 0; i < idx.numel(); i += 2) idx.data<int64_t>()[i] -= 4;  // axis 0 written as -3, -2
  b.output(b.op("ScatterND", {x, b.constant(idx), u}, {}, "box"));
  auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Concat"), 2u);
}

TEST(ScatterNdToConcat, FullOverwriteIsTheUpdates) {
  GraphBuilder b;
  Value* x = b.input("x", {2, 3});
  Value* u = b.op("Relu", {b.input("u", {2, 3})});
  b.output(b.op("ScatterND", {x, b.constant(boxIndices({0}, {2})), u}, {}, "all"));
  auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(passtest::countOps(b.graph(), "Concat") + passtest::countOps(b.graph(), "ScatterND"), 0u);
}

TEST(ScatterNdToConcat, RefusesWhatIsNotOneOrderedBox) {
  {  // rows written out of order
    GraphBuilder b;
    b.output(b.op("ScatterND", {b.input("x", {4, 2}), b.constant(i64({2, 1}, {2, 1})), b.input("u", {2, 2})}, {},
                  "swapped"));
    auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
    EXPECT_EQ(r.changes, 0u);
    EXPECT_TRUE(r.failedWith("do not walk one box in order"));
  }
  {  // a reduction
    GraphBuilder b;
    b.output(b.op("ScatterND", {b.input("x", {4, 2}), b.constant(boxIndices({1}, {2})), b.input("u", {2, 2})},
                  attrs({{"reduction", std::string("add")}}), "acc"));
    auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
    EXPECT_EQ(r.changes, 0u);
    EXPECT_TRUE(r.failedWith("reduction"));
  }
  {  // indices computed at run time
    GraphBuilder b;
    b.output(b.op("ScatterND", {b.input("x", {4, 2}), b.input("i", {2, 1}, DType::Int64), b.input("u", {2, 2})}));
    auto r = createPass("scatter_nd_to_concat");
    PassContext ctx;
    EXPECT_EQ(r->run(b.graph(), ctx), 0u);
  }
}

TEST(ScatterNdToConcat, SliceAcrossTwoConcatInputsStays) {
  GraphBuilder b;
  Value* c = b.op("Concat", {b.input("a", {2, 3}), b.input("b", {2, 4})}, attrs({{"axis", int64_t{1}}}));
  b.output(b.op("Slice", {c, b.int64s({2}), b.int64s({5}), b.int64s({1})}, {}, "straddle"));
  auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("several Concat inputs"));
}

TEST(ScatterNdToConcat, NegativeStepSliceInsideOneInput) {
  GraphBuilder b;
  Value* c = b.op("Concat", {b.input("a", {2, 3}), b.input("b", {2, 4})}, attrs({{"axis", int64_t{1}}}));
  // Columns 6, 5, 4, 3 of the Concat: all of b, reversed (a step -1 down to b's index 0).
  b.output(b.op("Slice", {c, b.int64s({6}), b.int64s({2}), b.int64s({1}), b.int64s({-1})}, {}, "reversed_b"));
  auto r = runPassChecked(b.graph(), "scatter_nd_to_concat", 0.0);
  EXPECT_EQ(r.changes, 1u);
}

}  // namespace
}  // namespace npuc
