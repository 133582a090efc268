// libFuzzer target: untrusted bytes through the whole Darknet load path of npuc.
//
//   input = cfg text, a 0xFF 0x00 0xFF 0x00 separator, then the .weights bytes
//        -> cfg parse -> layer plan (sizes, parameter counts) -> weights length check
//        -> graph emission -> the shared import tail (shape inference, folding, verify, op checks)
//
// Any npuc::Error is a correct refusal. Everything else is a finding: a sanitizer report, another
// exception type escaping, a timeout, or an allocation above -malloc_limit_mb (a cfg whose sizes
// were trusted before the weights file was checked against them).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "frontend/darknet/darknet_import.h"
#include "ir/graph.h"

namespace {

constexpr int64_t kFuzzFoldLimitBytes = int64_t{1} << 20;
const std::string kSeparator("\xff\x00\xff\x00", 4);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t cut = bytes.find(kSeparator);
  const std::string cfg = bytes.substr(0, cut);
  const std::string weights = cut == std::string::npos ? std::string() : bytes.substr(cut + kSeparator.size());
  try {
    npuc::ImportOptions opts;
    opts.fold_limit_bytes = kFuzzFoldLimitBytes;
    std::unique_ptr<npuc::Graph> g = npuc::importDarknetBytes(cfg, weights, opts, "fuzz.cfg", "fuzz.weights");
    g->verify();
  } catch (const npuc::Error&) {
    // A typed refusal is the expected outcome for almost every mutated input.
  }
  return 0;
}
