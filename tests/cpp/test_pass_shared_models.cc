// The fusion passes on real exporter output (shared/models): after import + optimize() every
// decomposed LayerNorm / GELU / SiLU / GLU is one op, and the optimized graph still matches ONNX
// Runtime's reference output within 1e-3 relative. Skipped when the shared folder is absent.
#include <iostream>
#include <map>
#include <memory>

#include "frontend/onnx_import.h"
#include "opset/macs.h"
#include "pass_test_util.h"
#include "passes/optimize.h"
#include "reference_npz.h"

namespace npuc {
namespace {

using passtest::countOps;

constexpr double kOptimizedTolerance = 1e-3;  // shared/models/README.md: optimized models to ~1e-3

class PassSharedModels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::sharedModelsDir();
    if (dir_.empty() || !testing::fs::is_directory(dir_))
      NPUC_SKIP_MISSING_DEP("shared models folder not found (set NPUC_SHARED_MODELS)");
  }

  // Imports and optimizes `name`.onnx (without `disabled`), checks it against its reference, and
  // returns it.
  std::unique_ptr<Graph> optimizedAndChecked(const std::string& name,
                                             std::vector<std::string> disabled = {}) {
    const testing::fs::path onnx = dir_ / (name + ".onnx");
    if (!testing::fs::exists(onnx)) {
      ADD_FAILURE() << "missing " << onnx;
      return nullptr;
    }
    auto g = importOnnxFile(onnx.string());
    OptimizeOptions options;
    options.disable_passes = std::move(disabled);
    report_ = optimize(*g, options);
    g->verify();
    testing::TempDir scratch;
    const testing::ReferenceData ref = testing::loadReferenceNpz(dir_ / (name + ".ref.npz"), scratch.path());
    const std::vector<Tensor> outs = evalGraph(*g, ref.inputs);
    EXPECT_EQ(outs.size(), ref.outputs.size());
    for (size_t i = 0; i < outs.size() && i < ref.outputs.size(); ++i)
      passtest::expectClose(outs[i], ref.outputs[i].second, kOptimizedTolerance,
                            name + " " + ref.outputs[i].first);
    return g;
  }

  testing::fs::path dir_;
  OptimizationReport report_;
};

TEST_F(PassSharedModels, TinyVitEveryLayerNormAndGeluFused) {
  auto g = optimizedAndChecked("tiny_vit");
  ASSERT_TRUE(g);
  // Two blocks (ln1, ln2 each) and the final norm; the model's other ReduceMean is token pooling.
  EXPECT_EQ(countOps(*g, "LayerNormalization"), 5u) << report_.toText();
  for (const char* op : {"Sqrt", "Sub", "Pow", "Erf"})
    EXPECT_EQ(countOps(*g, op), 0u) << op << "\n" << report_.toText();
  EXPECT_EQ(countOps(*g, "Gelu"), 2u);
  EXPECT_EQ(report_.changesBy("fuse_layernorm"), 5u);
}

// Issue #24's target: PyTorch's MultiheadAttention export kept 23 Reshapes and 13 Transposes. After
// attention_cleanup and propagate_reshapes: the patch flatten (Reshape + Transpose), per block the
// head split (one Reshape, the Transpose q and v share, k's Transpose) and the head merge
// (Transpose + Reshape), and nothing around the LayerNorms, Gemms, Adds or the token mean.
TEST_F(PassSharedModels, TinyVitKeepsAtMostTwelveReshapesAndTransposes) {
  auto g = optimizedAndChecked("tiny_vit");
  ASSERT_TRUE(g);
  EXPECT_LE(countOps(*g, "Reshape") + countOps(*g, "Transpose"), 12u) << report_.toText();
  EXPECT_EQ(countOps(*g, "Gemm"), 9u) << "every projection stays one Gemm";
  for (const Node* n : g->nodes())
    if (n->opType() == "LayerNormalization" || n->opType() == "Add")
      EXPECT_EQ(n->output()->rank(), 2) << n->name() << ": the residual stream stays [tokens, C]";
}

TEST_F(PassSharedModels, YoloFocusSiluFused) {
  auto g = optimizedAndChecked("yolo_focus");
  ASSERT_TRUE(g);
  EXPECT_EQ(countOps(*g, "SiLU"), 1u);
  EXPECT_EQ(countOps(*g, "Sigmoid"), 0u);
}

TEST_F(PassSharedModels, GluNetGluFused) {
  auto g = optimizedAndChecked("glu_net");
  ASSERT_TRUE(g);
  EXPECT_EQ(countOps(*g, "GLU"), 1u);
  for (const char* op : {"Split", "Sigmoid", "Mul"}) EXPECT_EQ(countOps(*g, op), 0u) << op;
}

TEST_F(PassSharedModels, ConvTransposeClipHasTheClipRightAfterTheConv) {
  auto g = optimizedAndChecked("conv_transpose_clip");
  ASSERT_TRUE(g);
  const Node* clip = nullptr;
  for (const Node* n : g->nodes()) clip = n->opType() == "Clip" ? n : clip;
  ASSERT_TRUE(clip);
  ASSERT_TRUE(clip->input(0)->producer());
  EXPECT_EQ(clip->input(0)->producer()->opType(), "Conv");
  EXPECT_EQ(countOps(*g, "Transpose"), 1u);
}

// "Op: count" per op type, for the before/after histograms the shuffle test prints.
std::string opHistogram(const Graph& g) {
  std::map<std::string, size_t> counts;
  for (const Node* n : g.nodes()) ++counts[n->opType()];
  std::string text;
  for (const auto& [op, n] : counts) text += op + ":" + std::to_string(n) + " ";
  return text;
}

TEST_F(PassSharedModels, ShuffleNetHasNoChannelShuffleLeft) {
  auto imported = importOnnxFile((dir_ / "shufflenet_v2_x0_5.onnx").string());
  auto g = optimizedAndChecked("shufflenet_v2_x0_5");
  ASSERT_TRUE(g);
  std::cout << "shufflenet_v2_x0_5 imported:  " << opHistogram(*imported) << "\n"
            << "shufflenet_v2_x0_5 optimized: " << opHistogram(*g) << "\n";
  // One channel region per stage: every shuffle, Slice and gather leaves; each branch's last Conv
  // is split by the block its channels leave the identity path at, each branch's first Conv reads
  // one Concat (4 + 8 + 4 blocks: 16 Splits, 16 Concats). No Conv is added.
  EXPECT_EQ(report_.changesBy("fold_channel_permutations"), 3u) << report_.toText();
  EXPECT_EQ(report_.changesBy("channel_shuffle_to_conv"), 0u) << report_.toText();
  for (const char* op : {"Reshape", "Transpose", "Slice", "Gather"}) EXPECT_EQ(countOps(*g, op), 0u) << op;
  EXPECT_EQ(countOps(*g, "Split"), 16u);
  EXPECT_EQ(countOps(*g, "Concat"), 16u);
  EXPECT_EQ(countOps(*g, "Conv"), countOps(*imported, "Conv"));
}

int64_t totalMacs(const Graph& g) {
  int64_t macs = 0;
  for (const Node* n : g.nodes()) macs += nodeMacs(*n);
  return macs;
}

TEST_F(PassSharedModels, ShuffleNetWithoutPermutationFoldingKeepsGatherConvsAndMoreMacs) {
  // channel_shuffle_to_conv alone: one 1x1 gather Conv per stride-1 block (13) and zero weight
  // columns in the branch Convs; fold_channel_permutations removes both.
  auto folded = optimizedAndChecked("shufflenet_v2_x0_5");
  auto shuffled = optimizedAndChecked("shufflenet_v2_x0_5", {"fold_channel_permutations"});
  ASSERT_TRUE(folded && shuffled);
  EXPECT_EQ(report_.changesBy("channel_shuffle_to_conv"), 16u) << report_.toText();
  EXPECT_EQ(countOps(*shuffled, "Conv"), countOps(*folded, "Conv") + 13u);
  EXPECT_LT(totalMacs(*folded), totalMacs(*shuffled));
  std::cout << "shufflenet_v2_x0_5 MACs: " << totalMacs(*shuffled) << " with channel_shuffle_to_conv alone, "
            << totalMacs(*folded) << " with fold_channel_permutations\n";
}

TEST_F(PassSharedModels, YoloFocusBecomesOneStrideTwoConv) {
  auto g = optimizedAndChecked("yolo_focus");
  ASSERT_TRUE(g);
  EXPECT_EQ(report_.changesBy("fold_focus"), 1u) << report_.toText();
  for (const char* op : {"Slice", "Concat", "SpaceToDepth"}) EXPECT_EQ(countOps(*g, op), 0u) << op;
  const Node* first = g->firstNode();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->opType(), "Conv");
  EXPECT_EQ(first->attrs().ints("strides"), (std::vector<int64_t>{2, 2}));
}

TEST_F(PassSharedModels, EveryModelStillMatchesItsReference) {
  for (const char* name : {"mobilenet_v2", "shufflenet_v2_x0_5"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(optimizedAndChecked(name));
  }
}

}  // namespace
}  // namespace npuc
