#include "passes/core/equivalence.h"

#include <cstring>
#include <functional>

namespace npuc {

namespace {
void mix(size_t& seed, size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}
}  // namespace

size_t tensorFingerprint(const Tensor& t) {
  // 64 evenly spaced 8-byte words: enough to separate distinct weights in practice, O(1) in size.
  constexpr size_t kSamples = 64;
  size_t h = std::hash<int>()(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) mix(h, std::hash<int64_t>()(d));
  const size_t bytes = t.nbytes();
  const auto* data = static_cast<const unsigned char*>(t.raw());
  if (bytes == 0 || !data) return h;
  const size_t words = (bytes + 7) / 8;
  const size_t stride = words > kSamples ? words / kSamples : 1;
  for (size_t w = 0; w < words; w += stride) {
    uint64_t word = 0;
    std::memcpy(&word, data + w * 8, std::min<size_t>(8, bytes - w * 8));
    mix(h, std::hash<uint64_t>()(word));
  }
  return h;
}

bool sameValueOrEqualConstant(const Value* a, const Value* b) {
  if (a == b) return true;
  if (!a || !b || !a->isConstant() || !b->isConstant()) return false;
  return a->constant().bitwiseEqual(b->constant());
}

bool equivalentNodes(const Node& a, const Node& b, size_t skip_input) {
  if (a.opType() != b.opType() || a.domain() != b.domain() || a.numOutputs() != b.numOutputs() ||
      a.numInputs() != b.numInputs()) {
    return false;
  }
  for (size_t i = 0; i < a.numInputs(); ++i) {
    if (i != skip_input && !sameValueOrEqualConstant(a.input(i), b.input(i))) return false;
  }
  return a.attrs() == b.attrs();
}

}  // namespace npuc
