// Fast exact IEEE half <-> float for values already rounded to half (the FP16 simulator's), as
// the program runtime stores them in fp16-planned buffers. Equal to floatToHalf / halfToFloat
// (ir/dtype.h) on every such value (tested on all 65536 half bit patterns).
#pragma once

#include <cstdint>
#include <cstring>

#include "ir/dtype.h"

namespace npuc::runtime {

// IEEE half bits of a float the simulator already rounded to half (so exact), and back. Normal
// numbers take the shift-and-rebias path (no rounding needed: the 13 dropped mantissa bits are
// zero); zeros, subnormals, Inf and NaN go through the general conversions of ir/dtype.h.
constexpr uint32_t kHalfMinNormalAsFloat = 0x38800000u;  // 2^-14
constexpr uint32_t kHalfMaxAsFloat = 0x477fe000u;        // 65504
constexpr uint32_t kExponentRebias = 112u << 10;         // (127 - 15) in the half's exponent field

inline uint16_t halfBitsOfRounded(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs - kHalfMinNormalAsFloat <= kHalfMaxAsFloat - kHalfMinNormalAsFloat)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | ((abs >> 13) - kExponentRebias));
  return floatToHalf(f);
}

inline float floatOfHalfBits(uint16_t h) {
  const uint32_t exponent = (h >> 10) & 0x1fu;
  if (exponent == 0 || exponent == 0x1fu) return halfToFloat(h);
  const uint32_t x = (static_cast<uint32_t>(h & 0x8000u) << 16) | (((h & 0x7fffu) + kExponentRebias) << 13);
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace npuc::runtime
