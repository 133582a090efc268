// libFuzzer target: untrusted bytes through the whole ONNX load path of npuc.
//
//   bytes -> protobuf parse -> IR build -> legacy upgrade -> topo sort + verify
//         -> shape inference with constant folding -> op support check
//         -> optimization passes (level 3, verifying the graph after every pass)
//         -> ONNX export of the optimized graph
//
// Any npuc::Error is a correct refusal. Everything else is a finding: a sanitizer report, an
// exception of another type escaping (std::terminate -> abort), a timeout or an allocation above
// libFuzzer's -malloc_limit_mb (a huge declared dim that was not refused before allocating).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ir/graph.h"
#include "passes/optimize.h"

namespace {

// Small enough that folding stays fast under ASan, large enough that real folds (shape
// sub-graphs, small constant tensors) still happen and the "keep the op" path is exercised.
constexpr int64_t kFuzzFoldLimitBytes = int64_t{1} << 20;

void loadOptimizeExport(const std::string& bytes) {
  npuc::ImportOptions opts;
  opts.fold_limit_bytes = kFuzzFoldLimitBytes;
  // No base_dir: the bytes did not come from a file, so external data must be refused.
  std::unique_ptr<npuc::Graph> graph = npuc::importOnnxBytes(bytes, opts);

  npuc::OptimizeOptions opt;
  opt.fold_limit_bytes = kFuzzFoldLimitBytes;
  opt.verify_each = true;  // a pass that corrupts the graph is a bug even if nothing crashes
  npuc::optimize(*graph, opt);
  graph->verify();
  (void)npuc::exportOnnxBytes(*graph);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    loadOptimizeExport(bytes);
  } catch (const npuc::Error&) {
    // A typed refusal is the expected outcome for almost every mutated input.
  }
  return 0;
}
