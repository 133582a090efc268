// Fusion grouping per the profile's rules: Conv[+activation][+Add], Gemm/MatMul+activation, and the
// cases that must not fuse (shared or escaping interior values, CPU nodes, broadcast Adds).
#include <gtest/gtest.h>

#include "target/fusion_groups.h"

namespace npuc {
namespace {

class FusionGraph {
 public:
  Graph g;
  Value* x;
  FusionGraph() { x = g.addInput("x", DType::Float32, {1, 8, 4, 4}); }
  Node* conv(const std::string& name, Value* in) {
    Value* w = g.addConstant(Tensor(DType::Float32, {8, 8, 1, 1}), name + "_w");
    return op("Conv", name, {in, w});
  }
  Node* op(const std::string& type, const std::string& name, const std::vector<Value*>& inputs,
           Shape out = {1, 8, 4, 4}) {
    Node* n = g.appendNode(type, inputs, 1, name);
    n->output()->setType(DType::Float32, std::move(out));
    return n;
  }
  std::vector<std::string> patterns(const std::string& soc = "rk3588", const OpTargetMap& op_target = {}) {
    PartitionReport r = partitionGraph(g, socProfile(soc), op_target);
    std::vector<std::string> out;
    for (const FusionGroup& f : fusionGroups(g, socProfile(soc), r))
      out.push_back(f.anchor->name() + ":" + f.pattern());
    return out;
  }
};

using Patterns = std::vector<std::string>;

TEST(FusionGroups, ConvActivationAndResidualAdd) {
  FusionGraph f;
  Node* c1 = f.conv("c1", f.x);
  Node* relu = f.op("Relu", "relu", {c1->output()});
  Node* c2 = f.conv("c2", relu->output());
  Node* sig = f.op("Sigmoid", "sig", {c2->output()});
  Node* add = f.op("Add", "add", {relu->output(), sig->output()});  // reads relu: relu has 2 readers
  Node* c3 = f.conv("c3", add->output());
  Node* add2 = f.op("Add", "add2", {add->output(), c3->output()});  // Conv+Add, other operand first
  f.g.addOutput(add2->output());
  EXPECT_EQ(f.patterns(), (Patterns{"c1:Conv+Relu", "c2:Conv+Sigmoid+Add", "c3:Conv+Add"}));
}

TEST(FusionGroups, RulesAreThoseOfTheProfile) {
  FusionGraph f;
  Node* c = f.conv("c", f.x);
  Node* elu = f.op("Elu", "elu", {c->output()});
  Value* a = f.g.addInput("a", DType::Float32, {4, 16});
  Value* w = f.g.addConstant(Tensor(DType::Float32, {16, 8}), "w");
  Node* gemm = f.op("Gemm", "gemm", {a, w}, {4, 8});
  Node* relu = f.op("Relu", "grelu", {gemm->output()}, {4, 8});
  Node* add = f.op("Add", "gadd", {relu->output(), relu->output()}, {4, 8});
  f.g.addOutput(elu->output());
  f.g.addOutput(add->output());
  // Gemm takes an activation but no residual Add on RK3588 (and Add(x, x) is no residual anyway).
  EXPECT_EQ(f.patterns("rk3588"), (Patterns{"c:Conv+Elu", "gemm:Gemm+Relu"}));
  // RV1106's rule lists neither Elu nor any Gemm fusion (and Elu does not run on its NPU at all).
  EXPECT_EQ(f.patterns("rv1106"), Patterns{});
}

TEST(FusionGroups, InteriorValuesMustStayInside) {
  FusionGraph f;
  Node* c1 = f.conv("c1", f.x);
  Node* r1 = f.op("Relu", "r1", {c1->output()});
  f.g.addOutput(c1->output());  // the conv output escapes: no fusion
  Node* c2 = f.conv("c2", r1->output());
  Node* r2 = f.op("Relu", "r2", {c2->output()});
  Node* neg = f.op("Neg", "neg", {c2->output()});  // second reader of c2's output
  Node* c3 = f.conv("c3", r2->output());
  Node* r3 = f.op("Relu", "r3", {c3->output()});
  Node* c4 = f.conv("c4", r3->output());
  Value* bcast = f.g.addConstant(Tensor(DType::Float32, {1, 8, 1, 1}), "bias");
  Node* add = f.op("Add", "badd", {c4->output(), bcast});  // broadcast Add is no residual
  f.g.addOutput(neg->output());
  f.g.addOutput(add->output());
  EXPECT_EQ(f.patterns(), (Patterns{"c3:Conv+Relu"}));
  // A CPU-placed activation is not absorbed.
  EXPECT_EQ(f.patterns("rk3588", {{"r3", "cpu"}}), Patterns{});
}

}  // namespace
}  // namespace npuc
