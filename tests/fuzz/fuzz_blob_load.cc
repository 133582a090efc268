// libFuzzer target: untrusted bytes through the whole .npub load path of npuc.
//
//   byte 0 (mode) | blob bytes
//     -> blob::readBlobBytes (header, checksum, section table, META, GRAPH + WEIGHTS decode)
//     -> QUNT section present: quant::decodeQuantPlan -> QuantizedExecutor (INT8 simulator)
//        otherwise:            the FP32 Executor (memory plan, kernels)
//     -> one run on zero inputs when every input is small
//
// The XXH3-128 checksum turns away every mutated byte at the door, and the section digests (SDIG)
// every mutated section behind it, so the first input byte picks a mode: even = the bytes as they
// are (tests the door itself), odd = "re-seal": the header's file-size field is set to the real
// size, the section digests and then the checksum recomputed, the way a buggy or hostile writer
// would produce them, so the mutation reaches the section table and the decoders behind it.
//
// Any npuc::Error is a correct refusal. Anything else is a finding: a sanitizer report, another
// exception type escaping (std::terminate -> abort), a timeout or an allocation above
// -malloc_limit_mb (a declared size trusted before it was checked).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/checksum.h"
#include "common/error.h"
#include "ir/graph.h"
#include "quant/graph/quant_plan_codec.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/executor.h"
#include "tests/cpp/blob_test_util.h"

namespace {

// Inputs are only run when they are this small in total: the point is to reach the kernels with
// the decoded shapes and attributes, not to spend the fuzzer's time on big convolutions.
constexpr int64_t kMaxRunElements = int64_t{1} << 16;

void reseal(std::string& bytes) {
  if (bytes.size() < npuc::blob::kHeaderSize) return;
  npuc::blobtest::writeField(bytes, npuc::blob::kOffFileSize, 8, bytes.size());
  npuc::blobtest::reseal(bytes);  // SDIG, then the checksum
}

// Zero tensors for the graph inputs, or an empty vector when any input is dynamic or too large.
std::vector<npuc::Tensor> zeroInputs(const npuc::Graph& graph) {
  std::vector<npuc::Tensor> inputs;
  int64_t total = 0;
  for (const npuc::Value* v : graph.inputs()) {
    if (!v->hasShape()) return {};
    int64_t n = 1;
    for (int64_t d : v->shape()) {
      if (d < 0 || (d > 0 && n > kMaxRunElements / d)) return {};
      n *= d;
    }
    total += n;
    if (total > kMaxRunElements) return {};
    inputs.emplace_back(v->dtype(), v->shape());  // Tensor zero-fills
  }
  return inputs;
}

void loadAndRun(const std::string& bytes) {
  npuc::blob::LoadedBlob b = npuc::blob::readBlobBytes(bytes, std::nullopt, "<fuzz>");
  const std::vector<npuc::Tensor> inputs = zeroInputs(*b.graph);
  for (const npuc::blob::ExtraSection& s : b.extra_sections) {
    if (s.kind != npuc::blob::kSectionQuant) continue;
    const npuc::quant::QuantPlan plan = npuc::quant::decodeQuantPlan(s.bytes);
    const npuc::quant::QuantizedExecutor sim(*b.graph, plan);
    if (!inputs.empty()) (void)sim.run(inputs);
    return;
  }
  const npuc::Executor exec(*b.graph);
  if (!inputs.empty()) (void)exec.run(inputs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool reseal_first = data[0] & 1;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (reseal_first) reseal(bytes);
  try {
    loadAndRun(bytes);
  } catch (const npuc::Error&) {
    // A typed refusal is the expected outcome for almost every mutated input.
  }
  return 0;
}
