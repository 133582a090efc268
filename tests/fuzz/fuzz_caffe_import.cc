// libFuzzer target: untrusted bytes through the whole Caffe load path of npuc.
//
//   bytes = prototxt text [ "\n--caffemodel--\n" caffemodel bytes ]
//         -> text-format parse + binary NetParameter parse -> layer conversion (blob lookup,
//            shape checks, per-node shape inference) -> the shared import tail
//         -> optimization passes (level 3, verifying the graph after every pass)
//
// Any npuc::Error is a correct refusal. Everything else is a finding: a sanitizer report, an
// exception of another type escaping, a timeout or an allocation above -malloc_limit_mb.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "frontend/caffe/caffe_import.h"
#include "ir/graph.h"
#include "passes/optimize.h"

namespace {

// Separates the prototxt from the caffemodel (tests/fuzz/make_seeds.py writes the same).
constexpr char kSeparator[] = "\n--caffemodel--\n";
constexpr int64_t kFuzzFoldLimitBytes = int64_t{1} << 20;

void loadAndOptimize(const std::string& input) {
  const size_t at = input.find(kSeparator);
  const std::string prototxt = input.substr(0, at);
  const std::string caffemodel = at == std::string::npos ? "" : input.substr(at + sizeof(kSeparator) - 1);
  npuc::CaffeImportOptions opts;
  opts.base.fold_limit_bytes = kFuzzFoldLimitBytes;
  std::unique_ptr<npuc::Graph> graph =
      npuc::importCaffeBytes(prototxt, at == std::string::npos ? nullptr : &caffemodel, opts);
  npuc::OptimizeOptions opt;
  opt.fold_limit_bytes = kFuzzFoldLimitBytes;
  opt.verify_each = true;
  npuc::optimize(*graph, opt);
  graph->verify();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loadAndOptimize(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const npuc::Error&) {
    // A typed refusal is the expected outcome for almost every mutated input.
  }
  return 0;
}
