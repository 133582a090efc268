#include "quant/sim/broadcast_runs.h"

namespace npuc::quant {

namespace {

// Strides of `in` broadcast to an output of `rank` dims: 0 along the dims it repeats.
std::vector<int64_t> broadcastStrides(const Shape& in, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  const std::vector<int64_t> own = shapeStrides(in);
  const size_t offset = rank - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[offset + i] = in[i] == 1 ? 0 : own[i];
  return strides;
}

}  // namespace

BroadcastRuns::BroadcastRuns(const Shape& a, const Shape& b, const Shape& out) {
  const std::vector<int64_t> sa = broadcastStrides(a, out.size()), sb = broadcastStrides(b, out.size());
  std::vector<Dim> dims;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;  // adds nothing to any offset
    const Dim next{out[d], sa[d], sb[d]};
    // Merged into the previous dim when, for both inputs, stepping the previous dim once equals
    // stepping this one `size` times (contiguous with it, or both repeated).
    if (!dims.empty() && dims.back().stride_a == next.stride_a * next.size &&
        dims.back().stride_b == next.stride_b * next.size) {
      dims.back() = Dim{dims.back().size * next.size, next.stride_a, next.stride_b};
      continue;
    }
    dims.push_back(next);
  }
  if (dims.empty()) return;  // one element
  const Dim inner = dims.back();
  dims.pop_back();
  outer_ = dims;
  length_ = inner.size;
  a_steps_ = inner.stride_a != 0;  // the innermost dim of an input is contiguous (1) or repeated (0)
  b_steps_ = inner.stride_b != 0;
  for (const Dim& d : outer_) count_ *= d.size;
}

}  // namespace npuc::quant
