// ONNX export: round trips through import give the same IR, onnx.checker accepts the output,
// canonical forms are converted back for opset 13/17, npuc's own ops get their domain import.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "onnx_test_util.h"
#include "opset/registry.h"

namespace npuc {
namespace {

using testing::ModelBuilder;
using testing::setAttr;
using testing::TempDir;
namespace fs = std::filesystem;

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

int64_t opsetOf(const onnx::ModelProto& m, const std::string& domain) {
  for (const auto& os : m.opset_import()) {
    if (os.domain() == domain) return os.version();
  }
  return 0;
}

// Runs onnx.checker on `path`; skips the calling test when Python's onnx is missing.
void expectCheckerPasses(const std::string& path) {
  const std::string script = (testing::testsDir() / "models" / "check_onnx.py").string();
  auto [status, out] = testing::runCommand(std::string(testing::kSystemPython) + " " + script + " " + path);
  EXPECT_EQ(status, 0) << out;
}

class FrontendExport : public ::testing::Test {
 protected:
  void SetUp() override { has_onnx_python_ = testing::pythonHas("onnx"); }

  // import -> export -> import must reproduce the IR exactly; the export must pass the checker.
  void roundTrip(const std::string& model_bytes, const std::string& label) {
    SCOPED_TRACE(label);
    auto first = importOnnxBytes(model_bytes);
    const std::string exported = exportOnnxBytes(*first);
    auto second = importOnnxBytes(exported);
    EXPECT_EQ(first->dump(), second->dump());
    if (has_onnx_python_) {
      const std::string path = (dir_.path() / (label + ".onnx")).string();
      std::ofstream(path, std::ios::binary) << exported;
      expectCheckerPasses(path);
    }
  }

  TempDir dir_;
  bool has_onnx_python_ = false;
};

// A small CNN-like graph in opset 9 with legacy forms (Pad/Clip attributes, Softmax axis=1 on
// 4-D), so the round trip also covers the upgraded forms.
std::string legacyModel() {
  ModelBuilder m(9);
  m.input("x", {1, 2, 4, 4}).output("prob");
  std::vector<float> w(2 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i);
  m.initializer("w", {2, 2, 3, 3}, w);
  auto& pad = m.node("Pad", {"x"}, {"padded"}, "pad");
  setAttr(pad, "pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1});
  m.node("Conv", {"padded", "w"}, {"conv"}, "conv");
  auto& clip = m.node("Clip", {"conv"}, {"relu6"}, "clip");
  setAttr(clip, "min", 0.0f);
  setAttr(clip, "max", 6.0f);
  setAttr(m.node("ReduceMean", {"relu6"}, {"mean"}, "mean"), "axes", std::vector<int64_t>{3});
  setAttr(m.node("Softmax", {"mean"}, {"prob"}, "softmax"), "axis", int64_t{1});
  return m.bytes();
}

TEST_F(FrontendExport, RoundTripOfSmallModels) {
  ModelBuilder relu;
  relu.input("x", {2, 3}).output("y");
  relu.node("Relu", {"x"}, {"y"}, "relu");
  roundTrip(relu.bytes(), "relu");
  roundTrip(legacyModel(), "legacy");
}

TEST_F(FrontendExport, RoundTripOfSharedModels) {
  const fs::path dir = testing::sharedModelsDir();
  if (dir.empty() || !fs::is_directory(dir)) NPUC_SKIP_MISSING_DEP("shared models folder not found");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnx") continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    roundTrip(bytes, e.path().stem().string());
  }
}

TEST_F(FrontendExport, ReduceAxesGoBackToTheAttribute) {
  auto g = importOnnxBytes(legacyModel());
  const onnx::ModelProto m = parse(exportOnnxBytes(*g));
  EXPECT_EQ(opsetOf(m, ""), 13);
  const auto& nodes = m.graph().node();
  auto mean =
      std::find_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.op_type() == "ReduceMean"; });
  ASSERT_NE(mean, nodes.end());
  EXPECT_EQ(mean->input_size(), 1);
  ASSERT_EQ(mean->attribute_size(), 1);
  EXPECT_EQ(mean->attribute(0).name(), "axes");
  EXPECT_EQ(mean->attribute(0).ints(0), 3);
  for (const auto& init : m.graph().initializer())
    EXPECT_NE(init.name(), "mean_axes") << "unused initializer kept";
}

// Rewrites may give copies their original's name (the IR allows it); ONNX Runtime refuses two
// nodes of one name, so the export makes them unique.
TEST_F(FrontendExport, RepeatedNodeNamesAreMadeUnique) {
  auto g = importOnnxBytes(legacyModel());
  size_t count = 0;
  for (Node* n : g->nodes()) {
    n->setName("same");
    ++count;
  }
  ASSERT_GE(count, 2u);
  const onnx::ModelProto m = parse(exportOnnxBytes(*g));
  std::set<std::string> names;
  for (const auto& n : m.graph().node()) EXPECT_TRUE(names.insert(n.name()).second) << n.name();
  EXPECT_EQ(names.count("same"), 1u);
  EXPECT_EQ(names.count("same_2"), 1u);
}

TEST_F(FrontendExport, TypesOfEveryValueAreWritten) {
  auto g = importOnnxBytes(legacyModel());
  const onnx::ModelProto m = parse(exportOnnxBytes(*g));
  ASSERT_EQ(m.graph().input_size(), 1);
  const auto& in = m.graph().input(0).type().tensor_type();
  EXPECT_EQ(in.elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(in.shape().dim_size(), 4);
  EXPECT_EQ(in.shape().dim(3).dim_value(), 4);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim_size(), 4);
  // Every node output other than the graph output has a value_info with a static shape.
  size_t intermediates = 0;
  for (const Node* n : g->nodes()) intermediates += n->numOutputs();
  EXPECT_EQ(static_cast<size_t>(m.graph().value_info_size()), intermediates - 1);
  for (const auto& vi : m.graph().value_info()) {
    for (const auto& d : vi.type().tensor_type().shape().dim()) EXPECT_TRUE(d.has_dim_value()) << vi.name();
  }
}

TEST_F(FrontendExport, LayerNormalizationNeedsOpset17) {
  ModelBuilder b(17);
  b.input("x", {2, 8}).output("y");
  b.initializer("gamma", {8}, std::vector<float>(8, 1.0f));
  b.initializer("beta", {8}, std::vector<float>(8, 0.0f));
  setAttr(b.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, "ln"), "epsilon", 1e-5f);
  auto g = importOnnxBytes(b.bytes());
  EXPECT_EQ(opsetOf(parse(exportOnnxBytes(*g)), ""), 17);
  roundTrip(b.bytes(), "layernorm");
}

TEST_F(FrontendExport, NpucOpsGetTheirDomain) {
  Graph g;
  g.name = "npuc_ops";
  Value* x = g.addInput("x", DType::Float32, {2, 4});
  Node* gelu = g.appendNode("Gelu", {x}, 1, "gelu");
  gelu->setDomain(kNpucDomain);
  gelu->output()->setType(DType::Float32, {2, 4});
  g.addOutput(gelu->output());
  const onnx::ModelProto m = parse(exportOnnxBytes(g));
  EXPECT_EQ(opsetOf(m, kNpucDomain), 1);
  EXPECT_EQ(m.graph().node(0).domain(), kNpucDomain);
  const std::string bytes = exportOnnxBytes(g);
  auto back = importOnnxBytes(bytes);
  EXPECT_EQ(back->dump(), g.dump());
  if (has_onnx_python_) {
    const std::string path = (dir_.path() / "npuc_ops.onnx").string();
    exportOnnxFile(g, path);
    expectCheckerPasses(path);
  }
}

TEST_F(FrontendExport, UnwritablePathIsNamed) {
  Graph g;
  Value* x = g.addInput("x", DType::Float32, {1});
  g.appendNode("Relu", {x}, 1, "relu");
  g.addOutput(g.findNode("relu")->output());
  const std::string path = "/nonexistent/dir/out.onnx";
  try {
    exportOnnxFile(g, path);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npuc
