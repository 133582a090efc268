#include "blob/byte_io.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "common/error.h"

namespace npuc::blob {

void ByteWriter::putLE(uint64_t v, int n) {
  for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void ByteWriter::f32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  u32(bits);
}

void ByteWriter::count(size_t n, const char* what) {
  if (n > std::numeric_limits<uint32_t>::max())
    throw BlobError(fmt::format("cannot write blob: too many {} ({})", what, n));
  u32(static_cast<uint32_t>(n));
}

void ByteWriter::str(const std::string& s, size_t max_len, const char* what) {
  if (s.size() > max_len) {
    constexpr size_t kShown = 40;  // enough to recognize the string, not to flood the message
    throw BlobError(
        fmt::format("cannot write blob: {} '{}{}' is {} bytes long, more than the .npub limit of {}", what,
                    s.substr(0, kShown), s.size() > kShown ? "..." : "", s.size(), max_len));
  }
  unboundedStr(s);
}

void ByteWriter::unboundedStr(const std::string& s) {
  count(s.size(), "bytes in a string");
  bytes_.append(s);
}

void ByteWriter::raw(const void* data, size_t n) {
  if (n) bytes_.append(static_cast<const char*>(data), n);
}

void ByteWriter::padTo(uint64_t alignment) {
  const size_t rem = bytes_.size() % alignment;
  if (rem) bytes_.append(alignment - rem, '\0');
}

void ByteReader::fail(const std::string& message) const {
  throw BlobError(fmt::format("corrupt blob: {} at offset {}: {}", context_, absolute(), message));
}

const uint8_t* ByteReader::need(size_t n, const char* what) {
  if (n > remaining()) fail(fmt::format("truncated {} (needs {} bytes, {} remain)", what, n, remaining()));
  const uint8_t* p = data_ + pos_;
  pos_ += n;
  return p;
}

static uint64_t readLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

uint8_t ByteReader::u8(const char* what) {
  return *need(1, what);
}
uint16_t ByteReader::u16(const char* what) {
  return static_cast<uint16_t>(readLE(need(2, what), 2));
}
uint32_t ByteReader::u32(const char* what) {
  return static_cast<uint32_t>(readLE(need(4, what), 4));
}
uint64_t ByteReader::u64(const char* what) {
  return readLE(need(8, what), 8);
}

float ByteReader::f32(const char* what) {
  const uint32_t bits = u32(what);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string ByteReader::str(const char* what, size_t max_len) {
  const uint32_t len = u32(what);
  if (len > max_len) fail(fmt::format("{} is {} bytes long, more than the limit of {}", what, len, max_len));
  const uint8_t* p = need(len, what);
  return std::string(reinterpret_cast<const char*>(p), len);
}

uint32_t ByteReader::count(const char* what, size_t min_elem_bytes) {
  const uint32_t n = u32(what);
  if (min_elem_bytes && n > remaining() / min_elem_bytes)
    fail(fmt::format("{} = {} cannot fit in the {} bytes that remain", what, n, remaining()));
  return n;
}

void ByteReader::expectEnd() const {
  if (remaining()) fail(fmt::format("{} unexpected trailing bytes", remaining()));
}

}  // namespace npuc::blob
