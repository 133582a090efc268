// The inner product of the wide kernels' fast paths (wide_mac.h): contiguous int32 operands,
// exact int64 sum, optional weight groups. Header-only so each kernel file inlines it.
#pragma once
#include <cstdint>

namespace npuc::quant {

inline int64_t dotWide(const int32_t* a, const int32_t* b, int64_t n) {
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<int64_t>(a[i]) * b[i];
  return s;
}

// sum_g m[g] * dot(group g); group_size 0: the plain dot product.
inline int64_t groupedDotWide(const int32_t* w, const int32_t* x, int64_t n, int64_t group_size,
                              const int32_t* multipliers) {
  if (group_size <= 0) return dotWide(w, x, n);
  int64_t acc = 0;
  for (int64_t begin = 0, g = 0; begin < n; begin += group_size, ++g) {
    const int64_t len = begin + group_size <= n ? group_size : n - begin;
    acc += multipliers[g] * dotWide(w + begin, x + begin, len);
  }
  return acc;
}

}  // namespace npuc::quant
