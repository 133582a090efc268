#include "perf/digest.h"

#include <cstdio>

namespace npuc::perf {

namespace {

using u128 = unsigned __int128;

u128 fnvOffsetBasis() {
  return (u128(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
}
u128 fnvPrime() {
  return (u128(1) << 88) | 0x13b;
}

}  // namespace

Digest128 digest128(const std::string& bytes) {
  u128 h = fnvOffsetBasis();
  for (unsigned char c : bytes) {
    h ^= c;
    h *= fnvPrime();
  }
  return {static_cast<uint64_t>(h >> 64), static_cast<uint64_t>(h)};
}

std::string Digest128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

bool Digest128::fromHex(const std::string& text, Digest128* out) {
  if (text.size() != 32) return false;
  uint64_t parts[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = text[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    parts[i / 16] = (parts[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  *out = {parts[0], parts[1]};
  return true;
}

}  // namespace npuc::perf
