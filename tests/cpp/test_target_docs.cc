// docs/supported_ops.md must be what the profiles and op checks generate. Run with
// NPUC_REGEN_DOCS=1 to rewrite the committed file instead of comparing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "target/supported_ops_doc.h"

namespace npuc {
namespace {

// The repository root, found from this source file's location (tests/cpp/<this file>).
std::filesystem::path repoRoot() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

TEST(SupportedOpsDoc, CommittedFileIsUpToDate) {
  std::filesystem::path doc = repoRoot() / "docs" / "supported_ops.md";
  std::string generated = supportedOpsMarkdown();
  const char* regen = std::getenv("NPUC_REGEN_DOCS");
  if (regen && std::string(regen) == "1") {
    std::ofstream(doc, std::ios::binary) << generated;
    GTEST_SKIP() << "rewrote " << doc;
  }
  std::ifstream in(doc, std::ios::binary);
  ASSERT_TRUE(in) << doc << " is missing; generate it with: " << kSupportedOpsRegenCommand;
  std::ostringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == generated)
      << doc << " is stale (a SoC profile or an op check changed); regenerate it with: "
      << kSupportedOpsRegenCommand;
}

TEST(SupportedOpsDoc, SaysTheLimitsInWords) {
  std::string md = supportedOpsMarkdown();
  EXPECT_NE(md.find("## rk3588"), std::string::npos);
  EXPECT_NE(md.find("## rk3566 (also rk3568)"), std::string::npos);
  EXPECT_NE(
      md.find("| Conv | number of spatial dims in 1..2 (assumed); kernel size per spatial dim in 1..31;"),
      std::string::npos);
  EXPECT_NE(
      md.find("| MatMul | reduction length K at most 8192 (assumed); tensor rank at most 4 (assumed) |"),
      std::string::npos);
  EXPECT_NE(md.find("CPU fallback: only Reshape, Flatten"), std::string::npos);  // rv1106
  EXPECT_NE(md.find("| int8 | 32 | 32 | 64 | 16 |"), std::string::npos);
  EXPECT_NE(md.find(kSupportedOpsRegenCommand), std::string::npos);
}

}  // namespace
}  // namespace npuc
