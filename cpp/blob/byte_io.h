// Little-endian primitive encoding for the .npub sections: a growable writer and a bounds-checked
// reader. The reader never trusts a length before checking it against the bytes that remain, so a
// hostile count cannot trigger a large allocation or an out-of-bounds read; every failure is a
// BlobError naming what was being read and its absolute offset in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npuc::blob {

class ByteWriter {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { putLE(v, 2); }
  void u32(uint32_t v) { putLE(v, 4); }
  void u64(uint64_t v) { putLE(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v);
  // u32 byte length, then the bytes (no terminator). A string longer than `max_len` (the limit the
  // reader enforces for this field, blob/blob_limits.h) is refused with a BlobError naming `what`.
  void str(const std::string& s, size_t max_len, const char* what);
  // The same encoding with no limit, for byte strings no reader parses field by field (the
  // canonical pipeline params, hashed and stored whole; their total is limited where stored).
  void unboundedStr(const std::string& s);
  // A count that must fit the format's u32 (throws BlobError naming `what` otherwise).
  void count(size_t n, const char* what);
  void raw(const void* data, size_t n);
  // Zero bytes up to the next multiple of `alignment`.
  void padTo(uint64_t alignment);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

 private:
  void putLE(uint64_t v, int n);
  std::string bytes_;
};

class ByteReader {
 public:
  // Reads data[0, size); `base` is the absolute file offset of data[0] (for messages) and
  // `context` names the region ("GRAPH section").
  ByteReader(const uint8_t* data, size_t size, uint64_t base, std::string context)
      : data_(data), size_(size), base_(base), context_(std::move(context)) {}

  uint8_t u8(const char* what);
  uint16_t u16(const char* what);
  uint32_t u32(const char* what);
  uint64_t u64(const char* what);
  int32_t i32(const char* what) { return static_cast<int32_t>(u32(what)); }
  int64_t i64(const char* what) { return static_cast<int64_t>(u64(what)); }
  float f32(const char* what);
  // A string of at most `max_len` bytes (and never more than remain).
  std::string str(const char* what, size_t max_len);
  // An element count whose elements take at least `min_elem_bytes` each: refused when the
  // remaining bytes cannot possibly hold that many, before anything is allocated.
  uint32_t count(const char* what, size_t min_elem_bytes);

  // The next `n` bytes, consumed (BlobError when fewer remain).
  const uint8_t* bytes(size_t n, const char* what) { return need(n, what); }
  size_t position() const { return pos_; }
  uint64_t absolute() const { return base_ + pos_; }
  size_t remaining() const { return size_ - pos_; }
  // BlobError if unread bytes remain (a section must be exactly what its encoding says).
  void expectEnd() const;
  // A BlobError "<context> at offset N: <message>" at the current position.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const uint8_t* need(size_t n, const char* what);
  const uint8_t* data_;
  size_t size_;
  uint64_t base_;
  std::string context_;
  size_t pos_ = 0;
};

}  // namespace npuc::blob
