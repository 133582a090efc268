// docs/supported_ops.md, generated from the SoC profiles and the op checks, so the document says
// exactly what the partitioner enforces. tests/cpp/test_target_docs.cc fails when the committed
// file is stale and rewrites it when run with NPUC_REGEN_DOCS=1.
#pragma once

#include <string>
#include <vector>

#include "target/soc_profile.h"

namespace npuc {

// The command that regenerates docs/supported_ops.md (quoted in the document and in test failures).
constexpr const char* kSupportedOpsRegenCommand =
    "NPUC_REGEN_DOCS=1 build/npuc_tests --gtest_filter='SupportedOpsDoc.*'";

// Markdown for the given profiles, in the given order.
std::string supportedOpsMarkdown(const std::vector<const SocProfile*>& socs);
// Markdown for the built-in profiles only (user profiles from NPUC_SOC_DIR never leak into the doc).
std::string supportedOpsMarkdown();

}  // namespace npuc
