// Numpy broadcasting of two inputs to an output, walked as runs: the output is `count()` runs
// of `length()` contiguous elements, over each of which an input either advances with the
// output (step 1) or stays on one element (step 0). Adjacent dims that broadcast alike are
// merged, so a same-shape pair is one run, x[1,C,H,W] * s[1,C,1,1] is C runs of H*W with s fixed
// per run, and x * scalar is one run with the scalar fixed: the per-element work is then a plain
// or a table loop, with no index arithmetic per element.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace npuc::quant {

class BroadcastRuns {
 public:
  // `a` and `b` broadcast (numpy rules, aligned right) to `out`.
  BroadcastRuns(const Shape& a, const Shape& b, const Shape& out);

  int64_t length() const { return length_; }
  int64_t count() const { return count_; }
  bool aSteps() const { return a_steps_; }  // input a advances along a run (else fixed)
  bool bSteps() const { return b_steps_; }

  // Calls f(offset in a, offset in b, offset in out) for each run, in output order.
  template <typename F>
  void forEach(F&& f) const {
    std::vector<int64_t> index(outer_.size(), 0);
    int64_t off_a = 0, off_b = 0;
    for (int64_t r = 0; r < count_; ++r) {
      f(off_a, off_b, r * length_);
      for (size_t d = outer_.size(); d-- > 0;) {  // odometer over the outer dims
        const Dim& dim = outer_[d];
        off_a += dim.stride_a;
        off_b += dim.stride_b;
        if (++index[d] < dim.size) break;
        off_a -= dim.stride_a * dim.size;
        off_b -= dim.stride_b * dim.size;
        index[d] = 0;
      }
    }
  }

 private:
  struct Dim {
    int64_t size = 1, stride_a = 0, stride_b = 0;
  };
  std::vector<Dim> outer_;  // every merged dim but the innermost
  int64_t length_ = 1, count_ = 1;
  bool a_steps_ = true, b_steps_ = true;
};

}  // namespace npuc::quant
