// Op traits (opset/op_traits.h): each trait on a few ops known to have it and a few known not to,
// every registered op carries a quantization class, and an unknown op has no traits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/op_traits.h"
#include "opset/registry.h"

namespace npuc {
namespace {

struct TraitCase {
  OpTrait trait;
  std::vector<std::string> with;
  std::vector<std::string> without;
};

// Op names are looked up as ONNX ops, then as npuc's own (Gelu, SiLU).
const TraitCase kCases[] = {
    {OpTrait::ElementwiseUnary,
     {"Relu", "Sigmoid", "Clip", "Cast", "Gelu", "SiLU"},
     {"Add", "Transpose", "Softmax"}},
    {OpTrait::ElementwiseBinary,
     {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Max"},
     {"Relu", "Concat", "MatMul"}},
    {OpTrait::Commutative,
     {"Add", "Mul", "Max", "Min", "Sum", "And", "Equal"},
     {"Sub", "Div", "Pow", "MatMul"}},
    {OpTrait::DataMovement,
     {"Reshape", "Transpose", "Concat", "Gather", "Identity", "Expand", "Tile", "DepthToSpace"},
     {"Resize", "Pad", "Relu", "Add", "MaxPool"}},
    {OpTrait::SizeChange,
     {"Resize", "Tile", "Pad", "MaxPool", "GlobalAveragePool"},
     {"Reshape", "Conv", "Relu"}},
    {OpTrait::WindowPooling, {"MaxPool", "AveragePool"}, {"GlobalAveragePool", "GlobalMaxPool", "Conv"}},
    {OpTrait::SlidingWindow,
     {"Conv", "ConvTranspose", "MaxPool", "AveragePool"},
     {"GlobalAveragePool", "MatMul"}},
    {OpTrait::Transcendental,
     {"Exp", "Log", "Sigmoid", "Softmax", "Pow", "Gelu"},
     {"Relu", "Add", "Abs", "Reshape"}},
    {OpTrait::SlowActivation,
     {"Sigmoid", "Tanh", "HardSwish", "Exp", "SiLU"},
     {"Relu", "Clip", "LeakyRelu", "Add"}},
    {OpTrait::FiniteUnary,
     {"Relu", "Sigmoid", "Clip", "Abs", "Identity"},
     {"Exp", "Log", "Reciprocal", "Add"}},
    {OpTrait::ChannelwiseBinary, {"Add", "Sub", "Mul", "Div", "PRelu"}, {"Max", "Pow", "MatMul", "Relu"}},
    {OpTrait::HostFusableActivation,
     {"Relu", "Sigmoid", "Tanh", "HardSwish", "LeakyRelu", "Clip"},
     {"Elu", "Exp", "Add", "Gelu"}},
    // ConvTranspose has no Conv/Gemm geometry for the cost model, but folds a following BatchNorm.
    {OpTrait::MacGeometry, {"Conv", "Gemm", "MatMul"}, {"ConvTranspose", "ConvAct", "Add", "MaxPool"}},
    {OpTrait::WeightLinear, {"Conv", "ConvTranspose", "Gemm", "MatMul"}, {"ConvAct", "Mul", "Add"}},
    {OpTrait::LearnedParameters,
     {"Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization"},
     {"Add", "Mul", "Reshape", "ConvAct"}},
    {OpTrait::ShapeOnly,
     {"Reshape", "Flatten", "Squeeze", "Unsqueeze"},
     {"Identity", "Transpose", "Expand", "DepthToSpace"}},
    {OpTrait::AxesReduction,
     {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"},
     {"ArgMax", "Softmax", "GlobalAveragePool"}},
};

TEST(OpTraits, KnownOpsHaveTheirTraits) {
  for (const TraitCase& c : kCases) {
    const std::string name = opTraitNames(c.trait);
    for (const std::string& op : c.with)
      EXPECT_TRUE(opTraitsOfType(op).has(c.trait)) << op << " should have " << name;
    for (const std::string& op : c.without)
      EXPECT_FALSE(opTraitsOfType(op).has(c.trait)) << op << " should not have " << name;
  }
}

TEST(OpTraits, QuantClassMatchesTheQuantizer) {
  const std::pair<const char*, QuantClass> expected[] = {
      {"Conv", QuantClass::Mac},
      {"Gemm", QuantClass::Mac},
      {"MatMul", QuantClass::Mac},
      {"Add", QuantClass::RequantBinary},
      {"Mul", QuantClass::RequantBinary},
      {"Concat", QuantClass::Concat},
      {"Relu", QuantClass::Clamp},
      {"Clip", QuantClass::Clamp},
      {"Reshape", QuantClass::DataMovement},
      {"Tile", QuantClass::DataMovement},
      {"MaxPool", QuantClass::SharedScale},
      {"Resize", QuantClass::SharedScale},
      {"Pad", QuantClass::SharedScale},
      {"AveragePool", QuantClass::AveragePool},
      {"GlobalAveragePool", QuantClass::AveragePool},
      {"Sigmoid", QuantClass::Lut},
      {"Exp", QuantClass::Lut},
      {"Gelu", QuantClass::Lut},
      {"Softmax", QuantClass::Float},
      {"Div", QuantClass::Float},
      {"LayerNormalization", QuantClass::Float},
  };
  for (const auto& [op, qc] : expected)
    EXPECT_EQ(opTraitsOfType(op).quant_class, qc)
        << op << " is " << quantClassName(opTraitsOfType(op).quant_class);
}

TEST(OpTraits, RunsInFloatFollowsTheQuantClass) {
  // Exp gets an int8 table from the quantizer, so the cost model no longer prices it in float.
  EXPECT_FALSE(opTraitsOfType("Exp").runsInFloat());
  EXPECT_FALSE(opTraitsOfType("Gelu").runsInFloat());
  EXPECT_FALSE(opTraitsOfType("Conv").runsInFloat());
  EXPECT_TRUE(opTraitsOfType("Softmax").runsInFloat());
  EXPECT_TRUE(opTraitsOfType("Div").runsInFloat());
}

TEST(OpTraits, LowEfficiencyCombinesItsClasses) {
  for (const char* op : {"Transpose", "Concat", "Resize", "Pad", "MaxPool", "Sigmoid", "Gelu"})
    EXPECT_TRUE(opTraitsOfType(op).lowEfficiencyOnNpu()) << op;
  for (const char* op : {"Conv", "Relu", "Add", "MatMul", "Softmax"})
    EXPECT_FALSE(opTraitsOfType(op).lowEfficiencyOnNpu()) << op;
}

TEST(OpTraits, EveryRegisteredOpHasAQuantClass) {
  // Registering an op without .quantClass(...) fails here: the quantizer and the cost model both
  // decide from it.
  const std::vector<const OpSchema*> schemas = OpRegistry::instance().schemas();
  ASSERT_FALSE(schemas.empty());
  for (const OpSchema* s : schemas)
    EXPECT_NE(s->traits.quant_class, QuantClass::Unset)
        << (s->domain.empty() ? "" : s->domain + ".") << s->op_type << " has no quantClass(...)";
}

TEST(OpTraits, UnknownOpHasNoTraits) {
  const OpTraits& t = opTraitsOfType("NoSuchOp");
  EXPECT_EQ(t.flags, OpTrait::None);
  EXPECT_EQ(t.quant_class, QuantClass::Unset);
  EXPECT_FALSE(t.elementwise());
  EXPECT_FALSE(t.lowEfficiencyOnNpu());
  EXPECT_FALSE(t.runsInFloat());
  // A known name in a domain the registry does not have is unknown too.
  EXPECT_EQ(opTraits("Relu", "com.example").flags, OpTrait::None);
  // npuc's ops are found only in their own domain by the domain-aware query.
  EXPECT_EQ(opTraits("Gelu", "").quant_class, QuantClass::Unset);
  EXPECT_EQ(opTraits("Gelu", kNpucDomain).quant_class, QuantClass::Lut);
}

TEST(OpTraits, NodeQueryUsesTheNodesDomain) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {4});
  Node* relu = g.appendNode("Relu", {x}, 1, "relu");
  EXPECT_TRUE(opTraits(*relu).has(OpTrait::ElementwiseUnary | OpTrait::FiniteUnary));
  relu->setDomain("ai.onnx");  // the same domain as ""
  EXPECT_TRUE(opTraits(*relu).has(OpTrait::ElementwiseUnary));
  relu->setDomain(kNpucDomain);
  EXPECT_EQ(opTraits(*relu).flags, OpTrait::None);
}

TEST(OpTraits, OpTypesWithKeepsRegistrationOrder) {
  // Target limit messages list these in this order (docs/soc_profiles.md).
  EXPECT_EQ(opTypesWith(OpTrait::SlidingWindow),
            (std::vector<std::string>{"Conv", "ConvTranspose", "MaxPool", "AveragePool"}));
  EXPECT_EQ(opTraitNames(OpTrait::DataMovement | OpTrait::SizeChange), "DataMovement|SizeChange");
  EXPECT_EQ(opTraitNames(OpTrait::None), "None");
}

// The first opset of each op's canonical form sits on its registration; ONNX export reads it.
TEST(OpTraits, SinceOpsetIsOnTheRegistration) {
  const OpRegistry& reg = OpRegistry::instance();
  EXPECT_EQ(reg.find("HardSwish")->since_opset, 14);
  EXPECT_EQ(reg.find("LayerNormalization")->since_opset, 17);
  EXPECT_EQ(reg.find("Relu")->since_opset, 1);
}

}  // namespace
}  // namespace npuc
