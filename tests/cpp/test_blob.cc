// The .npub container: round trips (hand-built graphs and every shared model), determinism,
// versioning, SoC checks and the extension-section rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "blob_test_util.h"
#include "frontend/onnx_import.h"
#include "opset/eval.h"
#include "reference_npz.h"

namespace npuc {
namespace {

using blobtest::options;

// Everything dump() does not show (float attributes print rounded, tensors by type only).
void expectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.opset_imports, b.opset_imports);
  EXPECT_EQ(a.metadata, b.metadata);
  const std::vector<Node*> na = a.nodeList(), nb = b.nodeList();
  ASSERT_EQ(na.size(), nb.size());
  for (size_t i = 0; i < na.size(); ++i) {
    EXPECT_EQ(na[i]->name(), nb[i]->name());
    EXPECT_EQ(na[i]->domain(), nb[i]->domain());
    EXPECT_TRUE(na[i]->attrs() == nb[i]->attrs()) << "attributes of node " << na[i]->name();
  }
  for (const Value* v : a.values()) {
    const Value* w = b.findValue(v->name());
    ASSERT_NE(w, nullptr) << v->name();
    EXPECT_EQ(v->dtype(), w->dtype()) << v->name();
    EXPECT_EQ(v->hasShape(), w->hasShape()) << v->name();
    EXPECT_EQ(v->shape(), w->shape()) << v->name();
    ASSERT_EQ(v->isConstant(), w->isConstant()) << v->name();
    if (v->isConstant()) {
      EXPECT_TRUE(v->constant().bitwiseEqual(w->constant())) << v->name();
    }
  }
}

TEST(BlobRoundTrip, SmallModelGraphAndOutputs) {
  auto g = blobtest::smallConvModel();
  const std::string bytes = blob::writeBlobBytes(*g, options());
  blob::LoadedBlob loaded = blob::readBlobBytes(bytes, std::string("rk3588"));
  expectSameGraph(*g, *loaded.graph);
  EXPECT_EQ(loaded.meta.soc, "rk3588");
  EXPECT_EQ(loaded.meta.options, options().options);
  EXPECT_EQ(loaded.meta.format_major, blob::kFormatMajor);
  EXPECT_EQ(loaded.meta.format_minor, blob::kFormatMinor);
  EXPECT_EQ(loaded.meta.producer, std::string("npuc ") + NPUC_VERSION);
  EXPECT_EQ(loaded.meta.model_digest, blob::modelDigest(*g));

  Tensor x(DType::Float32, {1, 3, 8, 8});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>((i * 37) % 23) / 7.0f - 1.5f;
  const auto want = evalGraph(*g, {{"x", x}});
  const auto got = evalGraph(*loaded.graph, {{"x", x}});
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(want[i].bitwiseEqual(got[i]));
}

TEST(BlobRoundTrip, EveryGraphFeature) {
  auto g = blobtest::everyFeatureGraph();
  auto opts = options();
  opts.quant["a"] = {-1, {0.125f}, {-3}};
  opts.quant["half"] = {0, {0.5f, 0.25f, 1.0f}, {0, 0, 0}};
  blob::LoadedBlob loaded = blob::readBlobBytes(blob::writeBlobBytes(*g, opts));
  expectSameGraph(*g, *loaded.graph);
  EXPECT_EQ(loaded.quant, opts.quant);
  const Node* custom = loaded.graph->findNode("custom");
  ASSERT_NE(custom, nullptr);
  EXPECT_EQ(custom->input(1), nullptr);
  EXPECT_EQ(custom->numInputs(), 5u);
  EXPECT_EQ(custom->attrs().s("s").size(), 15u);
  EXPECT_FALSE(loaded.graph->findValue("unshaped")->hasShape());
  EXPECT_EQ(loaded.graph->firstNode()->next()->name(), "");
}

TEST(BlobRoundTrip, ConstantsAre64ByteAlignedInPlace) {
  auto g = blobtest::smallConvModel();
  blob::LoadedBlob loaded = blob::readBlobBytes(blob::writeBlobBytes(*g, options()));
  for (const Value* v : loaded.graph->values())
    if (v->isConstant() && v->constant().nbytes()) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v->constant().raw()) % blob::kBlobAlignment, 0u) << v->name();
    }
}

TEST(BlobDeterminism, IdenticalInputsGiveIdenticalBytes) {
  auto g1 = blobtest::smallConvModel();
  auto g2 = blobtest::smallConvModel();
  const std::string a = blob::writeBlobBytes(*g1, options());
  EXPECT_EQ(a, blob::writeBlobBytes(*g1, options()));
  EXPECT_EQ(a, blob::writeBlobBytes(*g2, options()));
  EXPECT_EQ(a, blob::writeBlobBytes(*g1->clone(), options()));
  // A loaded blob re-encodes to the same bytes.
  EXPECT_EQ(a, blob::writeBlobBytes(*blob::readBlobBytes(a).graph, options()));
  // Options and SoC are part of the bytes; aliases are stored by canonical name.
  auto other = options();
  other.options["optimization_level"] = "2";
  EXPECT_NE(a, blob::writeBlobBytes(*g1, other));
  EXPECT_EQ(a, blob::writeBlobBytes(*g1, options("RK3588")));
}

TEST(BlobDeterminism, ModelDigestFollowsTheGraph) {
  auto g = blobtest::smallConvModel();
  const blob::Digest d = blob::modelDigest(*g);
  EXPECT_EQ(d, blob::modelDigest(*blobtest::smallConvModel()));
  g->findValue("shift")->setConstant(Tensor(DType::Float32, {1, 4, 1, 1}));
  EXPECT_NE(d, blob::modelDigest(*g));
}

TEST(BlobVersioning, NewerMajorIsRefusedWithUpgradeHint) {
  std::string b = blob::writeBlobBytes(*blobtest::smallConvModel(), options());
  blobtest::writeField(b, blob::kOffMajor, 2, 3);
  blobtest::writeField(b, blob::kOffMinor, 2, 0);
  blobtest::reseal(b);
  try {
    blob::readBlobBytes(b);
    FAIL() << "a 3.0 blob loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("blob format 3.0 is newer than this npuc (2.x); upgrade npuc"),
              std::string::npos)
        << e.what();
  }
}

// 2.0 stores NPU-packed weights once; a 1.2 blob (which has none) still loads, a 1.1 one (no
// section digests) and a 0.x one are refused naming their version.
TEST(BlobVersioning, Format1_2StillLoadsAndOlderOnesAreRefusedByName) {
  const std::string current = blob::writeBlobBytes(*blobtest::smallConvModel(), options());
  auto relabel = [&](uint16_t major, uint16_t minor) {
    std::string b = current;
    blobtest::writeField(b, blob::kOffMajor, 2, major);
    blobtest::writeField(b, blob::kOffMinor, 2, minor);
    blobtest::resealHeaderOnly(b);  // the version is in the header, outside every section digest
    return b;
  };
  const blob::LoadedBlob v12 = blob::readBlobBytes(relabel(1, 2));
  EXPECT_EQ(v12.meta.format_major, 1);
  EXPECT_EQ(v12.meta.format_minor, 2);
  EXPECT_TRUE(v12.packed_constants.empty());
  const std::pair<std::pair<uint16_t, uint16_t>, std::string> refused[] = {
      {{1, 1}, "blob format 1.1 has no section digests (added in 1.2)"},
      {{0, 9}, "blob format 0.9 is older than this npuc supports (1.2 to 2.x); recompile the model"}};
  for (const auto& [version, message] : refused) {
    try {
      blob::readBlobBytes(relabel(version.first, version.second));
      FAIL() << message;
    } catch (const BlobError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST(BlobVersioning, NewerMinorWithOptionalSectionLoads) {
  auto opts = options();
  opts.extra_sections.push_back({blob::fourcc("ZZZZ"), false, "future payload"});
  opts.extra_sections.push_back({blob::kSectionTasks, false, std::string("\x01\x02\0", 3)});
  std::string b = blob::writeBlobBytes(*blobtest::smallConvModel(), opts);
  blobtest::writeField(b, blob::kOffMinor, 2, 7);
  blobtest::reseal(b);
  blob::LoadedBlob loaded = blob::readBlobBytes(b);
  EXPECT_EQ(loaded.meta.format_minor, 7);
  ASSERT_EQ(loaded.extra_sections.size(), 2u);
  EXPECT_EQ(loaded.extra_sections[0].kind, blob::fourcc("ZZZZ"));
  EXPECT_EQ(loaded.extra_sections[0].bytes, "future payload");
  EXPECT_EQ(loaded.extra_sections[1].bytes, std::string("\x01\x02\0", 3));
}

TEST(BlobVersioning, UnknownRequiredSectionIsRefused) {
  auto opts = options();
  opts.extra_sections.push_back({blob::fourcc("ZZZZ"), true, "needed"});
  try {
    blob::readBlobBytes(blob::writeBlobBytes(*blobtest::smallConvModel(), opts));
    FAIL() << "loaded a blob with an unknown required section";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("section 'ZZZZ' at offset"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is required but unknown"), std::string::npos) << e.what();
  }
  opts.extra_sections = {{blob::kSectionMeta, false, ""}};
  EXPECT_THROW(blob::writeBlobBytes(*blobtest::smallConvModel(), opts), BlobError);
}

// A section taken from another blob with the header checksum recomputed is refused by its SDIG
// digest, naming it; a writer forging SDIG as well gets a blob of the other weights (the digests
// guard against splicing and corruption, not against a writer that rewrites everything).
TEST(BlobDigests, ASectionSplicedFromAnotherBlobIsRefusedNamingIt) {
  auto other = blobtest::smallConvModel();
  other->findValue("shift")->setConstant(Tensor(DType::Float32, {1, 4, 1, 1}));
  const std::string theirs = blob::writeBlobBytes(*other, options());
  std::string b = blob::writeBlobBytes(*blobtest::smallConvModel(), options());
  uint64_t size = 0, their_size = 0;
  const uint64_t at = blobtest::sectionOffset(b, blob::kSectionWeights, &size);
  const uint64_t their_at = blobtest::sectionOffset(theirs, blob::kSectionWeights, &their_size);
  ASSERT_EQ(size, their_size);
  b.replace(at, size, theirs.substr(their_at, their_size));
  blobtest::resealHeaderOnly(b);
  try {
    blob::readBlobBytes(b);
    FAIL() << "a spliced WGHT section loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("section 'WGHT' at offset " + std::to_string(at) +
                                         " does not match the digest SDIG records for it"),
              std::string::npos)
        << e.what();
  }
  blobtest::reseal(b);
  EXPECT_EQ(blob::readBlobBytes(b).meta.model_digest.size(), 16u);
}

TEST(BlobSoc, WrongSocIsRefusedNamingBoth) {
  const std::string b = blob::writeBlobBytes(*blobtest::smallConvModel(), options("rk3566"));
  EXPECT_NO_THROW(blob::readBlobBytes(b, std::string("RK3566")));
  try {
    blob::readBlobBytes(b, std::string("rk3588"));
    FAIL() << "a rk3566 blob loaded for rk3588";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("compiled for SoC 'rk3566', not for 'rk3588'"), std::string::npos)
        << e.what();
  }
}

// A folder opens as an ifstream on Linux and reports a size near INT64_MAX: loading one was a
// std::bad_alloc (MemoryError in Python) instead of a BlobError.
TEST(BlobFile, AFolderIsABlobErrorNotAnAllocation) {
  testing::TempDir dir;
  try {
    blob::loadBlob(dir.path().string());
    FAIL();
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

TEST(BlobFile, WriteAndLoadFromDisk) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "m.npub").string();
  auto g = blobtest::smallConvModel();
  blob::writeBlob(*g, path, options());
  blob::LoadedBlob loaded = blob::loadBlob(path, std::string("rk3588"));
  expectSameGraph(*g, *loaded.graph);
  EXPECT_THROW(blob::loadBlob((dir.path() / "missing.npub").string()), BlobError);
  std::ofstream(dir.path() / "not_a_blob.npub") << "ONNX? no";
  try {
    blob::loadBlob((dir.path() / "not_a_blob.npub").string());
    FAIL();
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("not an npuc blob"), std::string::npos) << e.what();
  }
}

// Blobs are written next to the destination and renamed into place: an existing file is replaced
// whole, a failed write leaves what was there (and no temporary file) behind.
TEST(BlobFile, WriteReplacesWholeAndAFailedWriteLeavesNothingBehind) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "m.npub").string();
  auto g = blobtest::smallConvModel();
  blob::writeBlob(*g, path, options());
  blob::BlobWriteOptions other = options();
  other.soc = "rk3566";
  blob::writeBlob(*g, path, other);
  EXPECT_EQ(blob::loadBlob(path).meta.soc, "rk3566");
  std::filesystem::create_directory(dir.path() / "a_folder");
  EXPECT_THROW(blob::writeBlob(*g, (dir.path() / "a_folder").string(), options()), BlobError);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "a_folder"));
  EXPECT_THROW(blob::writeBlob(*g, (dir.path() / "no_such_dir" / "m.npub").string(), options()), BlobError);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a_folder", "m.npub"}));
}

// Every shared model: import -> blob -> load gives the same graph and bit-identical outputs.
class BlobSharedModels : public ::testing::TestWithParam<const char*> {};

TEST_P(BlobSharedModels, RoundTripIsExact) {
  const testing::fs::path dir = testing::sharedModelsDir();
  if (dir.empty() || !testing::fs::is_directory(dir)) NPUC_SKIP_MISSING_DEP("shared models folder not found");
  const std::string name = GetParam();
  auto g = importOnnxFile((dir / (name + ".onnx")).string());
  const std::string bytes = blob::writeBlobBytes(*g, options());
  blob::LoadedBlob loaded = blob::readBlobBytes(bytes, std::string("rk3588"), name);
  expectSameGraph(*g, *loaded.graph);
  EXPECT_EQ(bytes, blob::writeBlobBytes(*loaded.graph, options()));

  testing::TempDir scratch;
  const testing::ReferenceData ref = testing::loadReferenceNpz(dir / (name + ".ref.npz"), scratch.path());
  const auto want = evalGraph(*g, ref.inputs);
  const auto got = evalGraph(*loaded.graph, ref.inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(want[i].bitwiseEqual(got[i])) << name << " output " << i;
}

INSTANTIATE_TEST_SUITE_P(All, BlobSharedModels,
                         ::testing::Values("conv_transpose_clip", "glu_net", "mobilenet_v2",
                                           "shufflenet_v2_x0_5", "tiny_vit", "yolo_focus"));

}  // namespace
}  // namespace npuc
