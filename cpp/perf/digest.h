// A 128-bit digest of an op's cost-relevant description, the key of the tiling cache.
//
// FNV-1a with the published 128-bit parameters (offset basis 0x6c62272e07bb014262b821756295c58d,
// prime 2^88 + 0x13b), computed with unsigned __int128. It is not cryptographic; it only has to
// make accidental collisions between layer shapes negligible, which 128 bits do, and it needs no
// library beyond the compiler.
#pragma once

#include <cstdint>
#include <string>

namespace npuc::perf {

struct Digest128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const Digest128& o) const { return hi == o.hi && lo == o.lo; }
  bool operator<(const Digest128& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  std::string hex() const;  // 32 lower-case hex digits
  // Parses hex(); returns false on anything else.
  static bool fromHex(const std::string& text, Digest128* out);
};

// Digest of a byte string (callers serialize the fields they key on into it).
Digest128 digest128(const std::string& bytes);

}  // namespace npuc::perf
