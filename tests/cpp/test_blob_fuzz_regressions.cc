// Regression tests for what fuzz_blob_load (tests/fuzz) found in blob loading.
#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob_test_util.h"
#include "common/error.h"

namespace npuc {
namespace {

blob::BlobWriteOptions rk3588() {
  blob::BlobWriteOptions o;
  o.soc = "rk3588";
  return o;
}

// A re-sealed blob whose Conv pads were mutated to 1.7e15 while the recorded output stayed
// [1,4,8,8]: the executor sized its padded workspace from the pads and the size wrapped
// (ASan allocation-size-too-big). The loader now re-infers shapes and refuses the disagreement.
TEST(BlobFuzzRegression, AttributesThatDisagreeWithRecordedShapesAreRefused) {
  std::unique_ptr<Graph> g = blobtest::smallConvModel();
  for (Node* n : g->nodes())
    if (n->name() == "conv") n->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1688849860263937});
  const std::string bytes = blob::writeBlobBytes(*g, rk3588());
  try {
    blob::readBlobBytes(bytes);
    FAIL() << "a blob whose Conv output disagrees with its pads loaded";
  } catch (const BlobError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'conv' (Conv): output 0 'conv_out"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("recorded as float32[1,4,8,8]"), std::string::npos) << e.what();
  }
}

TEST(BlobFuzzRegression, RecordedShapeOfAnotherRankIsRefused) {
  std::unique_ptr<Graph> g = blobtest::smallConvModel();
  for (Node* n : g->nodes())
    if (n->name() == "relu") n->output()->setType(DType::Float32, {1, 4, 64});
  EXPECT_THROW(blob::readBlobBytes(blob::writeBlobBytes(*g, rk3588())), BlobError);
}

TEST(BlobFuzzRegression, ConsistentGraphStillLoads) {
  EXPECT_NO_THROW(blob::readBlobBytes(blob::writeBlobBytes(*blobtest::smallConvModel(), rk3588())));
}

}  // namespace
}  // namespace npuc
