// Corrupted blobs are refused with BlobError, never loaded wrongly and never a crash: truncation,
// random byte flips (caught by the checksum), and edits resealed with a valid checksum (what a
// buggy or hostile writer produces), which the structural checks alone must catch.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "blob_test_util.h"

namespace npuc {
namespace {

using blobtest::options;

constexpr uint32_t kSeed = 20240611;  // fixed: failures must reproduce

// Loads `bytes`; true if it loaded, false on BlobError. Any other exception fails the test.
bool loads(const std::string& bytes, std::string* message = nullptr) {
  try {
    blob::LoadedBlob b = blob::readBlobBytes(bytes);
    b.graph->verify();
    return true;
  } catch (const BlobError& e) {
    if (message) *message = e.what();
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a BlobError: " << e.what();
    return true;
  }
}

// The kind of refusal, for the summary: the text before the first ':' or '(' after the origin.
std::string category(const std::string& msg) {
  const std::string prefix = "cannot load blob '<memory>': ";
  std::string rest = msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg;
  return rest.substr(0, rest.find_first_of(":(,"));
}

class BlobCorruption : public ::testing::Test {
 protected:
  void SetUp() override { blob_ = blob::writeBlobBytes(*blobtest::smallConvModel(), options()); }
  std::string blob_;
};

TEST_F(BlobCorruption, TruncationAtHundredRandomOffsetsIsRefused) {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<size_t> at(0, blob_.size() - 1);
  std::map<std::string, int> kinds;
  for (int i = 0; i < 100; ++i) {
    const size_t cut = at(rng);
    std::string msg;
    EXPECT_FALSE(loads(blob_.substr(0, cut), &msg)) << "truncated at " << cut << " loaded";
    ++kinds[category(msg)];
  }
  for (const auto& [k, n] : kinds) std::cout << "  truncation refused " << n << "x: " << k << "\n";
}

TEST_F(BlobCorruption, ThousandRandomByteFlipsAreRefused) {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<size_t> at(0, blob_.size() - 1);
  std::uniform_int_distribution<int> mask(1, 255);
  std::map<std::string, int> kinds;
  for (int i = 0; i < 1000; ++i) {
    std::string b = blob_;
    const size_t pos = at(rng);
    b[pos] = static_cast<char>(b[pos] ^ mask(rng));
    std::string msg;
    EXPECT_FALSE(loads(b, &msg)) << "flip at " << pos << " loaded";
    ++kinds[category(msg)];
  }
  for (const auto& [k, n] : kinds) std::cout << "  flip refused " << n << "x: " << k << "\n";
}

TEST_F(BlobCorruption, EveryByteFlippedOnceIsRefused) {
  for (size_t pos = 0; pos < blob_.size(); ++pos) {
    std::string b = blob_;
    b[pos] = static_cast<char>(~b[pos]);
    EXPECT_FALSE(loads(b)) << "flip at " << pos << " loaded";
  }
}

TEST_F(BlobCorruption, AppendedBytesAreRefused) {
  std::string msg;
  EXPECT_FALSE(loads(blob_ + std::string(64, '\0'), &msg));
  EXPECT_NE(msg.find("size mismatch"), std::string::npos) << msg;
  EXPECT_FALSE(loads("", &msg));
  EXPECT_NE(msg.find("not an npuc blob"), std::string::npos) << msg;
}

// Edits with a valid checksum: the structural checks must refuse or (for a harmless edit such as a
// changed name character) load a graph that verifies. Never a crash, never another exception.
TEST_F(BlobCorruption, ResealedFlipsInsideSectionsAreRefusedOrHarmless) {
  uint64_t graph_size = 0;
  const uint64_t graph_at = blobtest::sectionOffset(blob_, blob::kSectionGraph, &graph_size);
  ASSERT_GT(graph_at, 0u);
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<size_t> at(blob::kHeaderSize, graph_at + graph_size - 1);
  std::uniform_int_distribution<int> mask(1, 255);
  int refused = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string b = blob_;
    const size_t pos = at(rng);
    b[pos] = static_cast<char>(b[pos] ^ mask(rng));
    blobtest::reseal(b);
    refused += loads(b) ? 0 : 1;
  }
  std::cout << "  resealed flips: " << refused << " of 1000 refused, the rest loaded a valid graph\n";
  EXPECT_GT(refused, 500);  // most bytes are counts, indices, dtypes and lengths
}

TEST_F(BlobCorruption, ResealedStructuralEditsNameTheProblem) {
  const size_t entry0 = blob::kHeaderSize;  // META's table entry
  struct Case {
    const char* what;
    size_t offset;
    int width;
    uint64_t value;
    const char* expect;
  };
  const Case cases[] = {
      {"misaligned section", entry0 + 8, 8, blobtest::readField(blob_, entry0 + 8, 8) + 8,
       "is not 64-byte aligned"},
      {"section past the end", entry0 + 16, 8, uint64_t{1} << 40, "lies outside"},
      {"huge section count", blob::kOffSectionCount, 4, 0xFFFFFFFF, "implausible"},
      {"unknown section flag", entry0 + 4, 4, 0x80, "unknown flags"},
      {"reserved header byte", blob::kOffReserved, 1, 1, "reserved header byte"},
      {"huge SoC name length", blobtest::readField(blob_, entry0 + 8, 8), 4, 0x7FFFFFFF, "SoC name"},
  };
  for (const Case& c : cases) {
    std::string b = blob_;
    blobtest::writeField(b, c.offset, c.width, c.value);
    blobtest::reseal(b);
    std::string msg;
    EXPECT_FALSE(loads(b, &msg)) << c.what;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  }
}

TEST_F(BlobCorruption, ResealedGraphCountsCannotForceAllocation) {
  // The graph name length is the first field of GRAPH; claim 4 GiB.
  const uint64_t graph_at = blobtest::sectionOffset(blob_, blob::kSectionGraph);
  std::string b = blob_;
  blobtest::writeField(b, graph_at, 4, 0xFFFFFFFF);
  blobtest::reseal(b);
  std::string msg;
  EXPECT_FALSE(loads(b, &msg));
  EXPECT_NE(msg.find("GRAPH section at offset " + std::to_string(graph_at + 4)), std::string::npos) << msg;
}

}  // namespace
}  // namespace npuc
