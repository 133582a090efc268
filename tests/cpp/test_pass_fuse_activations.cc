// fuse_activations: GELU (erf and tanh forms, the 0.5 anywhere in the product, x/sqrt2 as Div or
// Mul), SiLU, HardSwish (Clip / 6, Clip * 1/6, HardSigmoid) and Mish fuse to one op, with either
// operand order; wrong constants, shared interior values and broadcasting products are refused.
// Every case is differential against the decomposed graph.
#include <cmath>
#include <functional>

#include "opset/registry.h"
#include "pass_test_util.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

constexpr double kActTolerance = 1e-5;

using Spelling = std::function<Value*(GraphBuilder&, Value*)>;

struct Case {
  const char* name;
  Spelling build;
  const char* op;
  const char* domain;
  const char* approximate;  // Gelu only
};

Value* geluErfGate(GraphBuilder& b, Value* x, bool div) {
  Value* z = div ? b.op("Div", {x, b.scalar(1.4142135f)}) : b.op("Mul", {b.scalar(0.70710678f), x});
  return b.op("Add", {b.op("Erf", {z}), b.scalar(1.0f)});
}

Value* geluTanhGate(GraphBuilder& b, Value* x, bool pow) {
  Value* cube = pow ? b.op("Pow", {x, b.scalar(3.0f)}) : b.op("Mul", {x, b.op("Mul", {x, x})});
  Value* inner = b.op("Add", {x, b.op("Mul", {b.scalar(0.044715f), cube})});
  Value* t = b.op("Tanh", {b.op("Mul", {inner, b.scalar(0.7978845608f)})});
  return b.op("Add", {b.scalar(1.0f), t});
}

const Case kCases[] = {
    {"gelu_half_last",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("Mul", {x, geluErfGate(b, x, true)}), b.scalar(0.5f)});
     },
     "Gelu", kNpucDomain, "none"},
    {"gelu_half_first",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("Mul", {b.scalar(0.5f), x}), geluErfGate(b, x, false)});
     },
     "Gelu", kNpucDomain, "none"},
    {"gelu_half_on_gate",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("Mul", {geluErfGate(b, x, true), b.scalar(0.5f)}), x});
     },
     "Gelu", kNpucDomain, "none"},
    {"gelu_div_by_two",
     [](GraphBuilder& b, Value* x) {
       return b.op("Div", {b.op("Mul", {geluErfGate(b, x, false), x}), b.scalar(2.0f)});
     },
     "Gelu", kNpucDomain, "none"},
    {"gelu_tanh_pow",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("Mul", {x, b.scalar(0.5f)}), geluTanhGate(b, x, true)});
     },
     "Gelu", kNpucDomain, "tanh"},
    {"gelu_tanh_cube_mul",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.scalar(0.5f), b.op("Mul", {geluTanhGate(b, x, false), x})});
     },
     "Gelu", kNpucDomain, "tanh"},
    {"silu",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {x, b.op("Sigmoid", {x})});
     },
     "SiLU", kNpucDomain, ""},
    {"silu_commuted",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("Sigmoid", {x}), x});
     },
     "SiLU", kNpucDomain, ""},
    {"hardswish_div6",
     [](GraphBuilder& b, Value* x) {
       Value* r6 = b.op("Clip", {b.op("Add", {x, b.scalar(3.0f)}), b.scalar(0.0f), b.scalar(6.0f)});
       return b.op("Div", {b.op("Mul", {x, r6}), b.scalar(6.0f)});
     },
     "HardSwish", "", ""},
    {"hardswish_times_sixth",
     [](GraphBuilder& b, Value* x) {
       Value* r6 = b.op("Clip", {b.op("Add", {b.scalar(3.0f), x}), b.scalar(0.0f), b.scalar(6.0f)});
       return b.op("Mul", {b.op("Mul", {r6, b.scalar(1.0f / 6.0f)}), x});
     },
     "HardSwish", "", ""},
    {"hardswish_hardsigmoid",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {b.op("HardSigmoid", {x}, attrs({{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}})), x});
     },
     "HardSwish", "", ""},
    {"mish",
     [](GraphBuilder& b, Value* x) {
       return b.op("Mul", {x, b.op("Tanh", {b.op("Softplus", {x})})});
     },
     "Mish", "", ""},
};

class PassFuseActivations : public ::testing::TestWithParam<Case> {};

TEST_P(PassFuseActivations, FusesToOneOp) {
  const Case& c = GetParam();
  GraphBuilder b;
  Value* x = b.op("Relu", {b.input("in", {2, 3, 5})});  // x is produced, as in a real network
  b.output(c.build(b, x));
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 1u);
  ASSERT_EQ(b.graph().numNodes(), 2u) << b.graph().dump();
  const Node* fused = b.graph().lastNode();
  EXPECT_EQ(fused->opType(), c.op);
  EXPECT_EQ(fused->domain(), c.domain);
  if (*c.approximate) {
    EXPECT_EQ(fused->attrs().s("approximate"), c.approximate);
  }
}

INSTANTIATE_TEST_SUITE_P(Spellings, PassFuseActivations, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(PassFuseActivationsWide, SameResultsOnAWideRange) {
  // Relu above keeps x >= 0; here x spans both signs and the Clip bounds.
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    Value* x = b.op("Mul", {b.input("in", {4, 16}), b.scalar(5.0f)});
    b.output(c.build(b, x));
    auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
    EXPECT_EQ(r.changes, 1u);
  }
}

TEST(PassFuseActivationsRefusals, WrongConstantsAreReported) {
  GraphBuilder b;
  Value* x = b.input("x", {8});
  Value* z = b.op("Mul", {x, b.scalar(0.7f)});  // not 1/sqrt(2)
  b.output(b.op("Mul", {b.op("Mul", {x, b.op("Add", {b.op("Erf", {z}), b.scalar(1.0f)})}), b.scalar(0.5f)},
                {}, "g"));
  Value* y = b.input("y", {8});
  b.output(b.op("Mul", {b.op("Mul", {y, geluErfGate(b, y, false)}), b.scalar(0.25f)}, {}, "s"));
  Value* w = b.input("w", {8});
  b.output(b.op("Mul", {w, b.op("HardSigmoid", {w}, attrs({{"alpha", 0.2f}}))}, {}, "h"));
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("GELU at node 'g' not fused: the Erf argument"));
  EXPECT_TRUE(
      r.failedWith("GELU at node 's' not fused: the product's constant factor 0.250000 is not 0.500000"));
  EXPECT_TRUE(r.failedWith("HardSwish at node 'h' not fused: HardSigmoid"));
}

TEST(PassFuseActivationsRefusals, GateWithTwoUsersIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", {8});
  Value* sig = b.op("Sigmoid", {x});
  b.output(b.op("Mul", {x, sig}));
  b.output(b.op("Neg", {sig}));
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("has 2 users"));
}

TEST(PassFuseActivationsRefusals, InteriorGraphOutputIsRefused) {
  GraphBuilder b;
  Value* x = b.input("x", {8});
  Value* gate = geluErfGate(b, x, true);
  b.output(b.op("Mul", {b.op("Mul", {x, gate}), b.scalar(0.5f)}));
  b.output(gate);
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 0u);
  EXPECT_TRUE(r.failedWith("is a graph output"));
}

TEST(PassFuseActivationsRefusals, BroadcastingProductIsRefused) {
  // Sigmoid of a [4] vector times a [3, 4] tensor: not x * sigmoid(x) for one x.
  GraphBuilder b;
  Value* x = b.input("x", {4});
  Value* y = b.op("Add", {b.input("y", {3, 4}), x});
  b.output(b.op("Mul", {y, b.op("Sigmoid", {x})}));
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 0u);
}

TEST(PassFuseActivations, ScaledSiluFusesTheInnerProduct) {
  // 0.5 * (x * sigmoid(x)) is not a SiLU at the outer Mul, but its inner product is one.
  GraphBuilder b;
  Value* x = b.input("x", {8});
  b.output(b.op("Mul", {b.op("Mul", {x, b.op("Sigmoid", {x})}), b.scalar(0.5f)}));
  auto r = runPassChecked(b.graph(), "fuse_activations", kActTolerance);
  EXPECT_EQ(r.changes, 1u);
  EXPECT_EQ(countOps(b.graph(), "SiLU"), 1u);
  EXPECT_EQ(countOps(b.graph(), "Mul"), 1u);
}

}  // namespace
}  // namespace npuc
