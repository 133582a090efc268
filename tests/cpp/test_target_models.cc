// Partitioning real PyTorch-exported models (the shared test models): what runs where on each SoC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "frontend/onnx_import.h"
#include "passes/optimize.h"
#include "target/fusion_groups.h"
#include "target/partition.h"

#include "onnx_test_util.h"

namespace npuc {
namespace {

// NPUC_SHARED_MODELS, else a `shared/models` folder beside the repository (found from this file).
std::filesystem::path sharedModels() {
  if (const char* env = std::getenv("NPUC_SHARED_MODELS")) return env;
  std::filesystem::path repo = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  return repo.parent_path() / "shared" / "models";
}

std::unique_ptr<Graph> loadModel(const std::string& file) {
  std::filesystem::path p = sharedModels() / file;
  if (!std::filesystem::exists(p)) return nullptr;
  return importOnnxFile(p.string());
}

TEST(PartitionModels, MobileNetV2RunsWhollyOnTheNpu) {
  std::unique_ptr<Graph> g = loadModel("mobilenet_v2.onnx");
  if (!g) NPUC_SKIP_MISSING_DEP("shared models not found at " + sharedModels().string());
  for (const char* soc : {"rk3588", "rk3566", "rk3562", "rv1106"}) {
    PartitionReport r = partitionGraph(*g, socProfile(soc));
    EXPECT_EQ(r.count(Device::Cpu), 0u) << soc << "\n" << r.toText();
    EXPECT_EQ(r.handovers, 0u) << soc;
    EXPECT_DOUBLE_EQ(r.npuMacShare(), 1.0) << soc;
    // MobileNetV2 (1.0, 224x224) is about 0.3 GMAC.
    EXPECT_GT(r.total_macs, 290'000'000) << soc;
    EXPECT_LT(r.total_macs, 320'000'000) << soc;
  }
  PartitionReport r = partitionGraph(*g, socProfile("rk3588"));
  size_t conv_clip = 0;
  for (const FusionGroup& f : fusionGroups(*g, socProfile("rk3588"), r))
    conv_clip += f.pattern() == "Conv+Clip";
  EXPECT_GE(conv_clip, 30u);  // every expand and depthwise conv carries its ReLU6
}

TEST(PartitionModels, ReportsForAllSharedModels) {
  for (const char* file :
       {"shufflenet_v2_x0_5.onnx", "tiny_vit.onnx", "glu_net.onnx", "conv_transpose_clip.onnx"}) {
    std::unique_ptr<Graph> g = loadModel(file);
    if (!g) NPUC_SKIP_MISSING_DEP("shared models not found at " + sharedModels().string());
    for (const std::string& soc : socNames()) {
      PartitionReport r = partitionGraph(*g, socProfile(soc));
      EXPECT_EQ(r.nodes.size(), g->numNodes()) << file << " " << soc;
      EXPECT_LE(r.npu_macs, r.total_macs);
      if (std::getenv("NPUC_PRINT_PARTITIONS")) std::cout << file << "\n" << r.toText() << "\n";
    }
  }
}

// Issue acceptance: after the graph passes, the CNNs run every MAC on the RK3588 NPU, and every
// CPU fallback of tiny_vit comes with a reason.
TEST(PartitionModels, AfterPassesTheCnnsRunAllMacsOnTheNpu) {
  for (const char* file : {"mobilenet_v2.onnx", "shufflenet_v2_x0_5.onnx"}) {
    std::unique_ptr<Graph> g = loadModel(file);
    if (!g) NPUC_SKIP_MISSING_DEP("shared models not found at " + sharedModels().string());
    optimize(*g);
    PartitionReport r = partitionGraph(*g, socProfile("rk3588"));
    EXPECT_DOUBLE_EQ(r.npuMacShare(), 1.0) << file << "\n" << r.toText();
    EXPECT_EQ(r.count(Device::Cpu), 0u) << file << "\n" << r.toText();
  }
}

TEST(PartitionModels, TinyVitCpuOpsCarryReasons) {
  std::unique_ptr<Graph> g = loadModel("tiny_vit.onnx");
  if (!g) NPUC_SKIP_MISSING_DEP("shared models not found at " + sharedModels().string());
  optimize(*g);
  PartitionReport r = partitionGraph(*g, socProfile("rk3588"));
  const std::string text = r.toText();
  for (const NodePlacement& p : r.nodes) {
    if (p.device != Device::Cpu) continue;
    EXPECT_FALSE(p.detail.empty()) << p.label;
    EXPECT_NE(text.find(p.label), std::string::npos) << p.label << " missing from the report:\n" << text;
  }
}

}  // namespace
}  // namespace npuc
