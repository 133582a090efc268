// The fusion chain matcher shared by host fusion and the NPU fusion groups: step order, the sole-reader
// rule, the absorbable predicate, residual Add shapes, and the reasons a candidate is refused.
#include "pass_test_util.h"
#include "passes/core/chain_matcher.h"

namespace npuc {
namespace {

using passtest::GraphBuilder;

ChainSpec reluSpec(std::vector<ChainStep> steps) {
  ChainSpec spec(m::oneOf({"Relu", "Sigmoid"}));
  spec.steps = std::move(steps);
  return spec;
}

struct ConvGraph {
  GraphBuilder b;
  Value* x = b.input("x", {1, 4, 6, 6});
  Value* w = b.randomConstant({4, 4, 1, 1}, 1);
  Node* conv(Value* in, const std::string& name) { return b.node("Conv", {in, w}, {}, name); }
  // A node with a given output type and no shape inference (mixed dtypes, another domain).
  Node* raw(const std::string& op, const std::vector<Value*>& inputs, const std::string& name,
            DType dtype = DType::Float32) {
    Node* n = b.graph().appendNode(op, inputs, 1, name);
    n->output()->setType(dtype, {1, 4, 6, 6});
    return n;
  }
};

bool anyContains(const std::vector<std::string>& reasons, const std::string& part) {
  for (const std::string& r : reasons)
    if (r.find(part) != std::string::npos) return true;
  return false;
}

TEST(ChainMatcher, ActivationThenAdd) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Node* relu = f.b.node("Relu", {c->output()}, {}, "relu");
  Node* add = f.b.node("Add", {f.x, relu->output()}, {}, "add");  // residual on the left
  f.b.output(add->output());
  FusionChain chain = matchFusionChain(*c, reluSpec({ChainStep::Activation, ChainStep::ResidualAdd}));
  EXPECT_EQ(chain.activation, relu);
  EXPECT_EQ(chain.add, add);
  EXPECT_EQ(chain.residual, f.x);
  EXPECT_EQ(chain.tail, add);
}

TEST(ChainMatcher, StepOrderIsTheSpecs) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Node* add = f.b.node("Add", {c->output(), f.x}, {}, "add");
  Node* relu = f.b.node("Relu", {add->output()}, {}, "relu");
  f.b.output(relu->output());
  // Add before the activation: the host's order.
  FusionChain host = matchFusionChain(*c, reluSpec({ChainStep::ResidualAdd, ChainStep::Activation}));
  EXPECT_EQ(host.add, add);
  EXPECT_EQ(host.activation, relu);
  EXPECT_EQ(host.tail, relu);
  // Activation first: the Add is refused as the activation, then taken as the Add; nothing after.
  FusionChain npu = matchFusionChain(*c, reluSpec({ChainStep::Activation, ChainStep::ResidualAdd}));
  EXPECT_EQ(npu.activation, nullptr);
  EXPECT_EQ(npu.add, add);
  EXPECT_TRUE(anyContains(npu.refusals, "activation refused: node 'add' (Add) is not a Relu|Sigmoid"));
}

TEST(ChainMatcher, SharedOrEscapingValuesStopTheChain) {
  ConvGraph f;
  Node* c1 = f.conv(f.x, "c1");
  f.b.node("Relu", {c1->output()}, {}, "r1");
  f.b.node("Neg", {c1->output()}, {}, "neg");
  Node* c2 = f.conv(f.x, "c2");
  Node* r2 = f.b.node("Relu", {c2->output()}, {}, "r2");
  f.b.output(c2->output());
  f.b.output(r2->output());
  FusionChain shared = matchFusionChain(*c1, reluSpec({ChainStep::Activation}));
  EXPECT_FALSE(shared.fusesAnything());
  EXPECT_TRUE(anyContains(shared.refusals, "has 2 users"));
  FusionChain escaping = matchFusionChain(*c2, reluSpec({ChainStep::Activation}));
  EXPECT_FALSE(escaping.fusesAnything());
  EXPECT_TRUE(anyContains(escaping.refusals, "is a graph output"));
}

TEST(ChainMatcher, AbsorbablePredicateGatesEveryStep) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Node* relu = f.b.node("Relu", {c->output()}, {}, "relu");
  f.b.output(relu->output());
  ChainSpec spec = reluSpec({ChainStep::Activation});
  spec.absorbable = [relu](const Node& n) { return &n != relu; };
  spec.absorbable_what = "on the NPU";
  FusionChain chain = matchFusionChain(*c, spec);
  EXPECT_FALSE(chain.fusesAnything());
  EXPECT_TRUE(anyContains(chain.refusals, "node 'relu' (Relu) is not on the NPU"));
}

TEST(ChainMatcher, ResidualAddNeedsTheSameTensor) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Value* bias = f.b.randomConstant({1, 4, 1, 1}, 2);
  Node* add = f.b.node("Add", {c->output(), bias}, {}, "badd");  // broadcasting: no residual
  f.b.output(add->output());
  FusionChain chain = matchFusionChain(*c, reluSpec({ChainStep::ResidualAdd}));
  EXPECT_EQ(chain.add, nullptr);
  EXPECT_TRUE(anyContains(chain.refusals, "residual Add refused: node 'badd' (Add)"));
}

TEST(ChainMatcher, ResidualDtypeOnlyWhenAsked) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Value* other = f.b.input("other", {1, 4, 6, 6}, DType::Float16);
  Node* add = f.raw("Add", {c->output(), other}, "add");
  f.b.output(add->output());
  ChainSpec spec = reluSpec({ChainStep::ResidualAdd});
  EXPECT_EQ(matchFusionChain(*c, spec).add, add);  // shapes agree
  spec.residual_same_dtype = true;
  EXPECT_EQ(matchFusionChain(*c, spec).add, nullptr);  // the FP16 operand is another type
}

TEST(ChainMatcher, ActivationMustReadTheChainValueFirst) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Node* clip = f.raw("Clip", {f.x, c->output()}, "clip");  // the conv output is the lower bound
  f.b.output(clip->output());
  ChainSpec spec(m::oneOf({"Clip"}));
  spec.steps = {ChainStep::Activation};
  FusionChain chain = matchFusionChain(*c, spec);
  EXPECT_EQ(chain.activation, nullptr);
  EXPECT_TRUE(anyContains(chain.refusals, "does not read"));
}

TEST(ChainMatcher, AnyDomainMatchesAnOpListedByName) {
  ConvGraph f;
  Node* c = f.conv(f.x, "c");
  Node* silu = f.raw("SiLU", {c->output()}, "silu");
  silu->setDomain(kNpucDomain);
  f.b.output(silu->output());
  ChainSpec onnx_only(m::oneOf({"SiLU"}));
  onnx_only.steps = {ChainStep::Activation};
  EXPECT_EQ(matchFusionChain(*c, onnx_only).activation, nullptr);
  ChainSpec by_name(m::oneOf({"SiLU"}).anyDomain());
  by_name.steps = {ChainStep::Activation};
  EXPECT_EQ(matchFusionChain(*c, by_name).activation, silu);
}

}  // namespace
}  // namespace npuc
