// A loaded blob's weights stay in its file mapping (docs/performance.md, "Memory: peak RSS"):
// the program's packed weights (NWGT) and the graph's plain constants (WGHT) point into a
// read-only mapping of the very file, which stays alive as long as anything holds them, and
// replacing the file by rename after loading leaves the loaded model as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "deploy/blob_runner.h"
#include "onnx_test_util.h"
#include "quant_test_util.h"
#include "target/soc_profile.h"

namespace npuc {
namespace {

namespace fs = std::filesystem;

// The path of the file mapped at `p` in this process (/proc/self/maps), empty when `p` is in no
// file-backed mapping (the heap, an anonymous mapping).
std::string mappedFileAt(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return inode == "0" ? "" : path;
  }
  return "";
}

// x -> Conv (weights packed into NWGT) -> Add of a constant (its bytes stay in WGHT) -> y.
std::shared_ptr<Graph> convAddGraph() {
  auto g = std::make_shared<Graph>();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 0.2f);
  auto random = [&](Shape s) {
    Tensor t(DType::Float32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  Value* x = g->addInput("x", DType::Float32, {1, 16, 8, 8});
  Node* conv = g->appendNode("Conv", {x, g->addConstant(random({32, 16, 3, 3}), "conv_w")}, 1, "conv");
  conv->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  conv->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv->output()->setType(DType::Float32, {1, 32, 8, 8});
  Node* add =
      g->appendNode("Add", {conv->output(), g->addConstant(random({1, 32, 8, 8}), "offset")}, 1, "add");
  add->output()->setType(DType::Float32, {1, 32, 8, 8});
  g->addOutput(add->output());
  return g;
}

fs::path writeBlob(const fs::path& dir, const std::string& name, const quant::QuantPlan* plan) {
  CompileOptions o;
  o.quantized = plan != nullptr;
  const fs::path path = dir / name;
  writeCompiledModel(compileModel(convAddGraph(), plan, socProfile("rk3588"), o), path.string());
  return path;
}

TEST(BlobMapping, PackedWeightsAndPlainConstantsPointIntoTheMappedFile) {
  testing::TempDir dir;
  const auto g = convAddGraph();
  const quant::QuantPlan q = testing::calibratedPlan(*g);
  for (const quant::QuantPlan* plan : {static_cast<const quant::QuantPlan*>(nullptr), &q}) {
    const fs::path path = writeBlob(dir.path(), plan ? "int8.npub" : "fp16.npub", plan);
    const CompiledModel m = loadCompiledModel(path.string());
    ASSERT_TRUE(m.program);
    const SharedBytes& nwgt = m.program->packed_weights;
    ASSERT_FALSE(nwgt.empty());
    EXPECT_EQ(mappedFileAt(nwgt.data()), path.string());
    EXPECT_EQ(mappedFileAt(nwgt.data() + nwgt.size() - 1), path.string());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(nwgt.data()) % 64, 0u);  // sections are 64-aligned in the file
    const Tensor& offset = m.graph->findValue("offset")->constant();
    EXPECT_EQ(mappedFileAt(offset.raw()), path.string());
    // The conv weight lives in NWGT only; its float32 tensor is rebuilt on the heap (copied: the
    // float form is not in the file).
    EXPECT_EQ(mappedFileAt(m.graph->findValue("conv_w")->constant().raw()), "");
    // The C++ deploy path loads the same way.
    deploy::BlobRunner runner(path.string());
    EXPECT_EQ(mappedFileAt(runner.model().program->packed_weights.data()), path.string());
  }
}

TEST(BlobMapping, TheMappingLivesAsLongAsAnyHolderOfTheWeights) {
  testing::TempDir dir;
  const fs::path path = writeBlob(dir.path(), "m.npub", nullptr);
  SharedBytes kept;
  std::string expected;
  {
    const CompiledModel m = loadCompiledModel(path.string());
    kept = m.program->packed_weights;  // shares the mapping, no copy
    EXPECT_EQ(kept.data(), m.program->packed_weights.data());
    expected = kept.str();
  }
  EXPECT_EQ(mappedFileAt(kept.data()), path.string());  // the model is gone, the mapping is not
  EXPECT_EQ(kept.view(), expected);
  const void* at = kept.data();
  kept = SharedBytes();
  EXPECT_EQ(mappedFileAt(at), "");  // the last holder let go: unmapped
}

// Rule (docs/performance.md): replace a loaded blob by writing a new file and renaming it over the
// old one (npuc's own writer does); the mapping keeps the old file's pages. Truncating or
// rewriting the loaded file in place is not supported (a mapping of a truncated file faults).
TEST(BlobMapping, ReplacingTheFileByRenameLeavesTheLoadedModelAsItWas) {
  testing::TempDir dir;
  const auto g = convAddGraph();
  const quant::QuantPlan q = testing::calibratedPlan(*g);
  const fs::path path = writeBlob(dir.path(), "m.npub", &q);
  deploy::BlobRunner runner(path.string());
  const std::vector<Tensor> inputs = testing::randomNormalInputs(*runner.model().graph, 1);
  const std::vector<Tensor> before = runner.runRaw(inputs);
  const std::string weights = runner.model().program->packed_weights.str();
  // Another model (the FP16 build) written beside it and renamed over it, then the name removed.
  const fs::path other = writeBlob(dir.path(), "other.npub", nullptr);
  fs::rename(other, path);
  fs::remove(path);
  EXPECT_EQ(runner.model().program->packed_weights.view(), weights);
  const std::vector<Tensor> after = runner.runRaw(inputs);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].bitwiseEqual(before[i]));
}

}  // namespace
}  // namespace npuc
