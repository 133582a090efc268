// User-defined ops (opset/custom_ops.h, reg_custom_op): a set travels with its graph, so shape
// inference, the reference evaluator, the FP32 executor, the simulator and a loaded blob all find
// the op; without the set every one of them names the op instead of guessing.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>

#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "deploy/blob_runner.h"
#include "frontend/shape_inference.h"
#include "opset/custom_ops.h"
#include "opset/eval.h"
#include "runtime/executor.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

// cstAxpy(x, y; alpha) = (alpha * x + y, x - y): two inputs, two outputs, a float attribute.
std::shared_ptr<const CustomOpSet> axpySet(std::atomic<int>* calls = nullptr) {
  CustomOpDef def;
  def.op_type = "cstAxpy";
  def.infer = [](const Node&, const std::vector<CustomOpDef::IoType>& in) {
    return std::vector<CustomOpDef::IoType>{in[0], in[0]};
  };
  def.compute = [calls](const Node& node, const std::vector<TensorView>& in, std::vector<TensorView>& out) {
    if (calls) ++*calls;
    const float alpha = node.attrs().f("alpha");
    const float* x = static_cast<const float*>(in[0].data);
    const float* y = static_cast<const float*>(in[1].data);
    float* a = static_cast<float*>(out[0].data);
    float* b = static_cast<float*>(out[1].data);
    for (int64_t i = 0; i < in[0].numel(); ++i) {
      a[i] = alpha * x[i] + y[i];
      b[i] = x[i] - y[i];
    }
  };
  return std::make_shared<const CustomOpSet>(std::vector<CustomOpDef>{def});
}

// x, y [1,4,4,4] -> Relu(x) -> cstAxpy(., y) -> (Relu, Sigmoid): NPU ops around a CPU custom op.
std::shared_ptr<Graph> axpyGraph(std::shared_ptr<const CustomOpSet> set) {
  auto g = std::make_shared<Graph>();
  g->custom_ops = std::move(set);
  Value* x = g->addInput("x", DType::Float32, {1, 4, 4, 4});
  Value* y = g->addInput("y", DType::Float32, {1, 4, 4, 4});
  Node* relu = g->appendNode("Relu", {x}, 1, "relu");
  Node* axpy = g->appendNode("cstAxpy", {relu->output(), y}, 2, "axpy");
  axpy->setDomain("rknn_cst");
  axpy->attrs().set("alpha", 0.5f);
  Node* r2 = g->appendNode("Relu", {axpy->output(0)}, 1, "relu2");
  Node* s = g->appendNode("Sigmoid", {axpy->output(1)}, 1, "sig");
  g->addOutput(r2->output());
  g->addOutput(s->output());
  inferShapesAndFold(*g);
  return g;
}

std::vector<Tensor> inputs() {
  Tensor x(DType::Float32, {1, 4, 4, 4}), y(DType::Float32, {1, 4, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>(i % 7) - 3.f;
    y.data<float>()[i] = static_cast<float>(i % 5) * 0.25f;
  }
  return {x, y};
}

// What the graph computes, written out.
std::vector<float> expected(const std::vector<Tensor>& in, int output) {
  std::vector<float> out;
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    const float x = std::max(0.f, in[0].data<float>()[i]), y = in[1].data<float>()[i];
    out.push_back(output == 0 ? std::max(0.f, 0.5f * x + y) : 1.f / (1.f + std::exp(-(x - y))));
  }
  return out;
}

TEST(CustomOps, TheSetRefusesBuiltInNamesDuplicatesAndMissingCallbacks) {
  CustomOpDef sigmoid;
  sigmoid.op_type = "Sigmoid";
  sigmoid.infer = [](const Node&, const std::vector<CustomOpDef::IoType>& in) { return in; };
  sigmoid.compute = [](const Node&, const std::vector<TensorView>&, std::vector<TensorView>&) {};
  EXPECT_THROW(CustomOpSet({sigmoid}), ConfigError);
  CustomOpDef twin = sigmoid;
  twin.op_type = "cstTwin";
  EXPECT_THROW(CustomOpSet({twin, twin}), ConfigError);
  twin.compute = nullptr;
  EXPECT_THROW(CustomOpSet({twin}), ConfigError);
}

TEST(CustomOps, InferenceAndEvaluationFindTheOpThroughTheGraphAndItsClones) {
  auto g = axpyGraph(axpySet());
  EXPECT_EQ(g->findNode("axpy")->output(1)->shape(), (Shape{1, 4, 4, 4}));
  EXPECT_TRUE(opTraits(*g->findNode("axpy")).has(OpTrait::UserDefined));
  const std::vector<Tensor> in = inputs();
  const std::unique_ptr<Graph> copy = g->clone();
  const std::vector<Tensor> out = evalGraph(*copy, {{"x", in[0]}, {"y", in[1]}});
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> want = expected(in, k);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[k].data<float>()[i], want[i], 1e-6f) << k << " " << i;
  }
}

TEST(CustomOps, WithoutTheSetTheOpIsNamedWithTheWayToRegisterIt) {
  auto g = axpyGraph(axpySet());
  g->custom_ops = nullptr;
  try {
    OpRegistry::instance().require(*g->findNode("axpy"));
    FAIL() << "no error";
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find("rknn_cst.cstAxpy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reg_custom_op"), std::string::npos) << e.what();
  }
}

TEST(CustomOps, ConstantInputsDoNotFoldTheOpAway) {
  auto g = std::make_shared<Graph>();
  g->custom_ops = axpySet();
  Tensor c(DType::Float32, {2});
  Value* a = g->addConstant(c, "a");
  Value* b = g->addConstant(c, "b");
  Node* n = g->appendNode("cstAxpy", {a, b}, 2, "axpy");
  n->attrs().set("alpha", 1.f);
  g->addOutput(n->output(0));
  g->addOutput(n->output(1));
  inferShapesAndFold(*g);
  EXPECT_NE(g->findNode("axpy"), nullptr);  // the user's compute runs at inference, as on the board
}

TEST(CustomOps, TheFloatBuildPlacesItOnTheCpuAndTheBlobNeedsTheSameSetToRun) {
  std::atomic<int> calls{0};
  auto set = axpySet(&calls);
  auto g = axpyGraph(set);
  CompileOptions options;
  options.quantized = false;
  const CompiledModel m = compileModel(g, nullptr, socProfile("rk3588"), options);
  const NodePlacement* axpy = m.placement.find("axpy");
  ASSERT_NE(axpy, nullptr);
  EXPECT_EQ(axpy->device, Device::Cpu);
  EXPECT_NE(axpy->detail.find("custom op cstAxpy"), std::string::npos) << axpy->detail;
  EXPECT_FALSE(axpy->cpu_runtime_lacks);  // the board runs it with the user's implementation
  EXPECT_TRUE(m.placement.warnings.empty());
  EXPECT_EQ(m.placement.find("relu")->device, Device::Npu);

  const auto path = std::filesystem::temp_directory_path() / "npuc_test_custom_ops.npub";
  writeCompiledModel(m, path.string());
  deploy::BlobRunner runner(path.string(), set);
  const std::vector<Tensor> in = inputs();
  const std::vector<Tensor> out = runner.runRaw(in);
  EXPECT_GE(calls.load(), 1);
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> want = expected(in, k);
    for (size_t i = 0; i < want.size(); ++i)  // the NPU computes in FP16
      EXPECT_NEAR(out[k].data<float>()[i], want[i], 2e-3f * (1.f + std::fabs(want[i]))) << k << " " << i;
  }
  deploy::BlobRunner without(path.string());
  EXPECT_THROW(without.runRaw(in), UnsupportedOpError);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace npuc
