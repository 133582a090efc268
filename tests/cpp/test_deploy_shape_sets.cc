// The C++ deploy runner on a config(dynamic_input) blob (deploy/blob_runner.h): it runs the program
// of the shape set the inputs have (the same bits as that set's program alone), takes either set's
// shape (or its NHWC form) in preprocess, and refuses a shape outside every set, listing them.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "deploy/blob_runner.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

// Conv 3x3 (3 -> 8) + Relu at H x W, with the same seeded weights at every size.
std::shared_ptr<Graph> convRelu(int64_t hw) {
  auto g = std::make_shared<Graph>();
  Value* x = g->addInput("x", DType::Float32, {1, 3, hw, hw});
  Tensor w(DType::Float32, {8, 3, 3, 3});
  uint32_t seed = 7;
  for (int64_t i = 0; i < w.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    w.data<float>()[i] = static_cast<float>(static_cast<int32_t>(seed >> 8) % 2001 - 1000) / 4000.f;
  }
  Node* conv = g->appendNode("Conv", {x, g->addConstant(w, "w")}, 1, "conv");
  conv->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  conv->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv->output()->setType(DType::Float32, {1, 8, hw, hw});
  Node* relu = g->appendNode("Relu", {conv->output()}, 1, "relu");
  relu->output()->setType(DType::Float32, {1, 8, hw, hw});
  g->addOutput(relu->output());
  return g;
}

Tensor ramp(const Shape& shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 97) / 48.f - 1.f;
  return t;
}

std::string bytesOf(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.data<float>()), static_cast<size_t>(t.numel()) * sizeof(float)};
}

TEST(DeployShapeSets, RunsTheSetTheInputsHaveAndRefusesOthers) {
  CompileOptions options;
  options.quantized = false;
  const SocProfile& soc = socProfile("rk3588");
  CompiledModel dynamic = compileModel(convRelu(8), nullptr, soc, options);
  const CompiledModel alone16 = compileModel(convRelu(16), nullptr, soc, options);
  dynamic.shape_variants.push_back(alone16);
  const auto dir = std::filesystem::temp_directory_path();
  const std::string dyn_path = (dir / "npuc_test_deploy_sets.npub").string();
  const std::string alone_path = (dir / "npuc_test_deploy_set1.npub").string();
  writeCompiledModel(dynamic, dyn_path);
  writeCompiledModel(alone16, alone_path);

  deploy::BlobRunner runner(dyn_path);
  ASSERT_EQ(runner.inputSets().size(), 2u);
  EXPECT_EQ(runner.inputSets()[1][0].shape, (Shape{1, 3, 16, 16}));
  deploy::BlobRunner reference(alone_path);
  const Tensor x16 = ramp({1, 3, 16, 16});
  const std::vector<Tensor> got = runner.runRaw({x16});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].shape(), (Shape{1, 8, 16, 16}));
  EXPECT_EQ(bytesOf(got[0]), bytesOf(reference.runRaw({x16})[0]));  // set 1's program, bit for bit
  EXPECT_EQ(runner.runRaw({ramp({1, 3, 8, 8})})[0].shape(), (Shape{1, 8, 8, 8}));

  // preprocess takes set 1's shape as is and in NHWC (no recorded mean/std: a layout change only).
  EXPECT_EQ(runner.preprocess(0, x16).shape(), (Shape{1, 3, 16, 16}));
  EXPECT_EQ(runner.preprocess(0, ramp({16, 16, 3})).shape(), (Shape{1, 3, 16, 16}));
  try {
    runner.preprocess(0, ramp({1, 3, 12, 12}));
    ADD_FAILURE() << "a 12x12 input was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("[1,3,8,8] or [1,3,16,16]"), std::string::npos) << e.what();
  }
  try {
    runner.runRaw({ramp({1, 3, 12, 12})});
    ADD_FAILURE() << "a 12x12 input ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("set 1: [1,3,16,16]"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dyn_path);
  std::filesystem::remove(alone_path);
}

}  // namespace
}  // namespace npuc
