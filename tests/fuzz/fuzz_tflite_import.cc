// libFuzzer target: untrusted bytes through the whole TFLite load path of npuc.
//
//   input = a .tflite flatbuffer
//        -> size / identifier checks -> flatbuffers Verifier -> operator conversion (indices,
//           buffer sizes, options) -> the shared import tail (shape inference, folding, verify)
//
// Any npuc::Error is a correct refusal. Everything else is a finding: a sanitizer report (a read
// the verifier should have stopped), another exception type escaping, a timeout, or an
// allocation above -malloc_limit_mb (a declared shape trusted before its buffer was checked).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "frontend/tflite/tflite_import.h"
#include "ir/graph.h"

namespace {

constexpr int64_t kFuzzFoldLimitBytes = int64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (bool nchw : {false, true}) {
    try {
      npuc::TfliteImportOptions opts;
      opts.base.fold_limit_bytes = kFuzzFoldLimitBytes;
      opts.input_is_nchw = nchw;
      npuc::TfliteImport imp = npuc::importTfliteBytes(bytes, opts, "fuzz.tflite");
      imp.graph->verify();
    } catch (const npuc::Error&) {
      // A typed refusal is the expected outcome for almost every mutated input.
    }
    if (size < 8 || bytes.compare(4, 4, "TFL3") != 0) break;  // the layout flag only matters past the header
  }
  return 0;
}
