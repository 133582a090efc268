// Numpy-style broadcasting for elementwise kernels, planned once per node.
//
// Every input is broadcast to the output shape. Adjacent output dims in which each input is
// either fully present or fully broadcast in the same way are merged, and dims of extent 1 are
// dropped, so the common cases collapse to very few loops:
//   same shape            -> one contiguous row over the whole tensor
//   tensor op scalar      -> one row, the scalar input has stride 0
//   NCHW op [1,C,1,1]     -> C rows of H*W, the per-channel input is constant within a row
// After merging, the innermost dim of every input has stride 1 (present) or 0 (broadcast), so a
// kernel only writes four tight, vectorizable row loops and forEachRow() walks the outer dims.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/tensor.h"

namespace npuc {
namespace ew {

// Rank limit after merging; beyond it a model is unusual enough to refuse with a clear message.
constexpr size_t kMaxBroadcastDims = 12;

template <size_t N>
class BroadcastPlan {
 public:
  BroadcastPlan() = default;
  BroadcastPlan(const Shape& out, const std::array<Shape, N>& ins) {
    const size_t rank = out.size();
    // Per output dim: which inputs are broadcast along it.
    std::vector<std::array<bool, N>> bcast;
    std::vector<int64_t> dims;
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == 1) continue;  // contributes nothing to the iteration
      std::array<bool, N> flags{};
      for (size_t k = 0; k < N; ++k) {
        const size_t r = ins[k].size();
        if (r > rank) throw ShapeError("input rank " + std::to_string(r) + " exceeds output rank");
        const int64_t in_dim = d + r < rank ? 1 : ins[k][d + r - rank];
        if (in_dim != out[d] && in_dim != 1) {
          throw ShapeError("input shape " + shapeStr(ins[k]) + " does not broadcast to " + shapeStr(out));
        }
        flags[k] = in_dim == 1;
      }
      if (!dims.empty() && bcast.back() == flags) {
        dims.back() *= out[d];
      } else {
        dims.push_back(out[d]);
        bcast.push_back(flags);
      }
    }
    if (dims.empty()) {  // scalar output (or all-ones shape)
      dims.push_back(1);
      bcast.push_back(std::array<bool, N>{});
    }
    if (dims.size() > kMaxBroadcastDims) {
      throw UnsupportedOpError("broadcast of " + shapeStr(out) + " needs " + std::to_string(dims.size()) +
                               " loop dims; at most " + std::to_string(kMaxBroadcastDims) + " are supported");
    }
    ndims_ = dims.size();
    for (size_t d = 0; d < ndims_; ++d) dims_[d] = dims[d];
    for (size_t k = 0; k < N; ++k) {
      int64_t stride = 1;
      for (size_t d = ndims_; d-- > 0;) {
        strides_[k][d] = bcast[d][k] ? 0 : stride;
        if (!bcast[d][k]) stride *= dims_[d];
      }
      inner_present_[k] = !bcast[ndims_ - 1][k];
    }
    numel_ = shapeNumel(out);
  }

  int64_t numel() const { return numel_; }
  int64_t innerLen() const { return dims_[ndims_ - 1]; }
  // True if input k advances along the innermost loop (stride 1); false if it is constant there.
  bool innerPresent(size_t k) const { return inner_present_[k]; }

  // Calls row(out_offset, in_offsets, len) once per innermost row. Allocation-free.
  template <typename RowFn>
  void forEachRow(RowFn&& row) const {
    if (numel_ == 0) return;
    const int64_t len = innerLen();
    const int64_t rows = numel_ / len;
    std::array<int64_t, N> off{};
    std::array<int64_t, kMaxBroadcastDims> idx{};
    for (int64_t r = 0; r < rows; ++r) {
      row(r * len, off);
      // Advance the odometer over the outer dims (all but the innermost).
      for (size_t d = ndims_ - 1; d-- > 0;) {
        if (++idx[d] < dims_[d]) {
          for (size_t k = 0; k < N; ++k) off[k] += strides_[k][d];
          break;
        }
        idx[d] = 0;
        for (size_t k = 0; k < N; ++k) off[k] -= strides_[k][d] * (dims_[d] - 1);
      }
    }
  }

 private:
  size_t ndims_ = 1;
  std::array<int64_t, kMaxBroadcastDims> dims_{};
  std::array<std::array<int64_t, kMaxBroadcastDims>, N> strides_{};
  std::array<bool, N> inner_present_{};
  int64_t numel_ = 0;
};

// One output row of a binary op: the four stride combinations as separate loops so each one
// vectorizes. `f` is called as f(a, b).
template <typename A, typename B, typename O, typename Fn>
inline void binaryRow(const A* a, bool a_vec, const B* b, bool b_vec, O* o, int64_t n, const Fn& f) {
  if (a_vec && b_vec) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (a_vec) {
    const B bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (b_vec) {
    const A av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    const O v = f(*a, *b);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

// out[i] = f(a[i], b[i]) over a planned broadcast.
template <typename A, typename B, typename O, typename Fn>
void runBinary(const BroadcastPlan<2>& plan, const A* a, const B* b, O* out, const Fn& f) {
  const int64_t len = plan.innerLen();
  const bool av = plan.innerPresent(0), bv = plan.innerPresent(1);
  plan.forEachRow([&](int64_t o, const std::array<int64_t, 2>& off) {
    binaryRow(a + off[0], av, b + off[1], bv, out + o, len, f);
  });
}

}  // namespace ew
}  // namespace npuc
