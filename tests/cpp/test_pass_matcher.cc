// The combinator matcher: operand commutativity, one-use guards on interior values, captures that
// are undone on backtracking, constant / scalar leaves, attribute predicates, and the reasons
// recorded for failed matches.
#include "opset/registry.h"
#include "pass_test_util.h"
#include "passes/core/matcher.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::GraphBuilder;

struct Fixture {
  GraphBuilder b;
  PassContext ctx;
  Rewriter rw{b.graph(), ctx};
};

TEST(PassMatcher, CommutedOperandsMatchAndCapture) {
  Fixture f;
  Value* x = f.b.input("x", {2, 3});
  Value* c = f.b.scalar(2.0f);
  Value* left = f.b.op("Mul", {c, x});  // constant on the left
  f.b.output(left);
  Value *cx = nullptr, *cc = nullptr;
  Node* bound = nullptr;
  auto pat = m::op("Mul", m::any(&cx), m::constant(&cc)).bind(&bound);
  ASSERT_TRUE(m::matchRoot(*left->producer(), pat, f.rw).succeeded());
  EXPECT_EQ(cx, x);
  EXPECT_EQ(cc, c);
  EXPECT_EQ(bound, left->producer());
}

TEST(PassMatcher, NonCommutativeOpKeepsOrder) {
  Fixture f;
  Value* x = f.b.input("x", {4});
  Value* d = f.b.op("Sub", {f.b.scalar(1.0f), x});
  f.b.output(d);
  auto pat = m::op("Sub", m::any(), m::constant());
  EXPECT_TRUE(m::matchRoot(*d->producer(), pat, f.rw).failed());
  // A first-level mismatch is the ordinary "not this pattern" case: not recorded.
  EXPECT_TRUE(f.ctx.match_failures.empty());
}

TEST(PassMatcher, DeepFailuresAreRecordedWithReason) {
  // Neg(Relu(Sub(1, x))) against Neg(Relu(Sub(any, constant))): root and Relu matched, then the
  // Sub's operands fail; that is worth telling the user.
  Fixture f;
  Value* x = f.b.input("x", {4});
  Value* n = f.b.op("Neg", {f.b.op("Relu", {f.b.op("Sub", {f.b.scalar(1.0f), x})})}, {}, "neg");
  f.b.output(n);
  auto pat = m::op("Neg", m::op("Relu", m::op("Sub", m::any(), m::constant())));
  EXPECT_TRUE(m::matchRoot(*n->producer(), pat, f.rw).failed());
  ASSERT_EQ(f.ctx.match_failures.size(), 1u);
  EXPECT_EQ(f.ctx.match_failures[0].node, "neg");
  EXPECT_NE(f.ctx.match_failures[0].reason.find("'x' is not a constant"), std::string::npos)
      << f.ctx.match_failures[0].reason;
}

TEST(PassMatcher, OrderedDisablesCommutation) {
  Fixture f;
  Value* x = f.b.input("x", {4});
  Value* y = f.b.op("Add", {f.b.scalar(1.0f), x});
  f.b.output(y);
  EXPECT_TRUE(m::matchRoot(*y->producer(), m::op("Add", m::any(), m::constant()), f.rw).succeeded());
  EXPECT_TRUE(m::matchRoot(*y->producer(), m::op("Add", m::any(), m::constant()).ordered(), f.rw).failed());
}

TEST(PassMatcher, FailedOrderUndoesCaptures) {
  // Add(Relu(a), Sigmoid(b)) matched as Add(any(&x), Relu(any(&y))): the first order binds x to
  // Relu's output and then fails on Sigmoid; the swapped order must leave x = Sigmoid's output.
  Fixture f;
  Value* a = f.b.input("a", {3});
  Value* bv = f.b.input("b", {3});
  Value* r = f.b.op("Relu", {a});
  Value* s = f.b.op("Sigmoid", {bv});
  Value* sum = f.b.op("Add", {r, s});
  f.b.output(sum);
  Value *x = nullptr, *y = nullptr;
  ASSERT_TRUE(
      m::matchRoot(*sum->producer(), m::op("Add", m::any(&x), m::op("Relu", m::any(&y))), f.rw).succeeded());
  EXPECT_EQ(x, s);
  EXPECT_EQ(y, a);
}

TEST(PassMatcher, InteriorValueWithTwoUsersDoesNotMatch) {
  Fixture f;
  Value* x = f.b.input("x", {3});
  Value* r = f.b.op("Relu", {x}, {}, "relu");
  Value* n = f.b.op("Neg", {r}, {}, "neg");
  f.b.output(n);
  f.b.output(f.b.op("Exp", {r}));  // second user of r
  EXPECT_TRUE(m::matchRoot(*n->producer(), m::op("Neg", m::op("Relu", m::any())), f.rw).failed());
  ASSERT_FALSE(f.ctx.match_failures.empty());
  EXPECT_NE(f.ctx.match_failures.back().reason.find("has 2 users"), std::string::npos);
  EXPECT_EQ(f.ctx.match_failures.back().node, "neg");
  // ... unless the pattern allows it.
  EXPECT_TRUE(m::matchRoot(*n->producer(), m::op("Neg", m::op("Relu", m::any()).allowMultipleUses()), f.rw)
                  .succeeded());
}

TEST(PassMatcher, InteriorGraphOutputDoesNotMatch) {
  Fixture f;
  Value* x = f.b.input("x", {3});
  Value* r = f.b.op("Relu", {x});
  Value* n = f.b.op("Neg", {r});
  f.b.output(n);
  f.b.output(r);
  EXPECT_TRUE(m::matchRoot(*n->producer(), m::op("Neg", m::op("Relu", m::any())), f.rw).failed());
  EXPECT_NE(f.ctx.match_failures.back().reason.find("is a graph output"), std::string::npos);
}

TEST(PassMatcher, ScalarConstantComparesValue) {
  Fixture f;
  Value* x = f.b.input("x", {3});
  Value* two = f.b.constant(Tensor::fromVector<float>({2.0f}, {1, 1}));
  Value* p = f.b.op("Pow", {x, two});
  f.b.output(p);
  EXPECT_TRUE(m::matchRoot(*p->producer(), m::op("Pow", m::any(), m::scalarConstant(2.0)), f.rw).succeeded());
  EXPECT_TRUE(m::matchRoot(*p->producer(), m::op("Pow", m::any(), m::scalarConstant(3.0)), f.rw).failed());
  Value* vec = f.b.constant(Tensor::fromVector<float>({2.0f, 2.0f, 2.0f}));
  Value* q = f.b.op("Pow", {x, vec});
  f.b.output(q);
  EXPECT_TRUE(m::matchRoot(*q->producer(), m::op("Pow", m::any(), m::scalarConstant()), f.rw).failed());
}

TEST(PassMatcher, AttributePredicatesAndArity) {
  Fixture f;
  Value* x = f.b.input("x", {2, 3});
  Value* t = f.b.op("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  f.b.output(t);
  Node& n = *t->producer();
  EXPECT_TRUE(m::matchRoot(n, m::op("Transpose", m::any()).attrEq("perm", std::vector<int64_t>{1, 0}), f.rw)
                  .succeeded());
  EXPECT_TRUE(m::matchRoot(n, m::op("Transpose", m::any()).attrEq("perm", std::vector<int64_t>{0, 1}), f.rw)
                  .failed());
  EXPECT_TRUE(m::matchRoot(n, m::op("Transpose", m::any(), m::any()), f.rw).failed());  // arity
  EXPECT_TRUE(m::matchRoot(n, m::op("Transpose"), f.rw).succeeded());                   // any arity
  auto rank2 = [](const Node& node) { return node.output()->rank() == 2; };
  EXPECT_TRUE(m::matchRoot(n, m::op("Transpose").where(rank2, "rank 2"), f.rw).succeeded());
}

TEST(PassMatcher, SameBindsRepeatedValue) {
  // x * x matched as Mul(any(&x), same(&x)).
  Fixture f;
  Value* x = f.b.input("x", {3});
  Value* y = f.b.input("y", {3});
  Value* sq = f.b.op("Mul", {x, x});
  Value* xy = f.b.op("Mul", {x, y});
  f.b.output(sq);
  f.b.output(xy);
  Value* cap = nullptr;
  EXPECT_TRUE(m::matchRoot(*sq->producer(), m::op("Mul", m::any(&cap), m::same(&cap)), f.rw).succeeded());
  EXPECT_TRUE(m::matchRoot(*xy->producer(), m::op("Mul", m::any(&cap), m::same(&cap)), f.rw).failed());
}

TEST(PassMatcher, OneOfAndExtraInputs) {
  Fixture f;
  Value* x = f.b.input("x", {2, 3});
  Value* r = f.b.op("Reshape", {x, f.b.int64s({3, 2})});
  Value* s = f.b.op("Unsqueeze", {r, f.b.int64s({0})});
  f.b.output(s);
  auto pat = m::oneOf({"Squeeze", "Unsqueeze"}, m::oneOf({"Reshape", "Flatten"}, m::any()).allowExtraInputs())
                 .allowExtraInputs();
  EXPECT_TRUE(m::matchRoot(*s->producer(), pat, f.rw).succeeded());
  // A different root op type is not worth a report line.
  const size_t before = f.ctx.match_failures.size();
  EXPECT_TRUE(m::matchRoot(*r->producer(), pat, f.rw).failed());
  EXPECT_EQ(f.ctx.match_failures.size(), before);
}

TEST(PassMatcher, TraitMatchesAnyOpWithTheTrait) {
  // Root on a fact rather than a list of op types: any unary elementwise op fed by a Transpose.
  Fixture f;
  Value* x = f.b.input("x", {2, 3});
  Value* t = f.b.op("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  Value* sig = f.b.op("Sigmoid", {t});
  Value* red = f.b.op("ReduceSum", {sig});
  f.b.output(red);
  Value* captured = nullptr;
  Node* root = nullptr;
  auto pat = m::trait(OpTrait::ElementwiseUnary, m::op("Transpose", m::any(&captured))).bind(&root);
  ASSERT_TRUE(m::matchRoot(*sig->producer(), pat, f.rw).succeeded());
  EXPECT_EQ(captured, x);
  EXPECT_EQ(root, sig->producer());
  // ReduceSum is not elementwise: the ordinary "not this pattern" case, not recorded.
  const size_t before = f.ctx.match_failures.size();
  EXPECT_TRUE(m::matchRoot(*red->producer(), pat, f.rw).failed());
  EXPECT_EQ(f.ctx.match_failures.size(), before);
  // As an operand: a trait pattern below the root.
  auto below = m::op("ReduceSum", m::trait(OpTrait::Transcendental, m::any())).allowExtraInputs();
  EXPECT_TRUE(m::matchRoot(*red->producer(), below, f.rw).succeeded());
  auto wrong = m::op("ReduceSum", m::trait(OpTrait::DataMovement, m::any())).allowExtraInputs();
  EXPECT_TRUE(m::matchRoot(*red->producer(), wrong, f.rw).failed());
}

TEST(PassMatcher, TraitLooksUpTheNodesDomain) {
  // npuc's Gelu is elementwise; the same name in another domain is not a known op.
  Fixture f;
  Value* x = f.b.input("x", {4});
  Node* gelu = f.b.graph().appendNode("Gelu", {x}, 1, "gelu");
  gelu->setDomain(kNpucDomain);
  auto pat = m::trait(OpTrait::ElementwiseUnary);
  EXPECT_TRUE(m::matchRoot(*gelu, pat, f.rw).succeeded());
  gelu->setDomain("com.example");
  EXPECT_TRUE(m::matchRoot(*gelu, pat, f.rw).failed());
}

}  // namespace
}  // namespace npuc
