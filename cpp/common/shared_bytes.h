// Immutable bytes with shared ownership: either bytes this object owns (a std::string moved in)
// or a view of memory another object owns, such as a loaded blob's file mapping, kept alive by an
// `owner` handle. Copies share the bytes (a copy costs a reference count, not the payload), so a
// loaded blob's packed weights can be held by the compiled model and by every runtime made from it
// without being copied out of the mapping (docs/performance.md, "Memory: peak RSS").
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace npuc {

class SharedBytes {
 public:
  SharedBytes() = default;
  // Owns `bytes` (moved in). Implicit: a std::string is the usual way bytes are made.
  SharedBytes(std::string bytes)  // NOLINT(google-explicit-constructor)
      : SharedBytes(std::make_shared<const std::string>(std::move(bytes))) {}
  SharedBytes(const char* text) : SharedBytes(std::string(text)) {}  // NOLINT(google-explicit-constructor)
  // `size` bytes at `data`, which `owner` keeps alive and unchanged for as long as it is held.
  static SharedBytes view(const void* data, size_t size, std::shared_ptr<const void> owner) {
    SharedBytes b;
    b.data_ = static_cast<const char*>(data);
    b.size_ = size;
    b.owner_ = std::move(owner);
    return b;
  }
  // Bytes [offset, offset + size) of this one, sharing its owner. The range must lie inside.
  SharedBytes slice(size_t offset, size_t size) const { return view(data_ + offset, size, owner_); }

  const char* data() const { return size_ ? data_ : ""; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data(), size_}; }
  operator std::string_view() const { return view(); }     // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }  // a copy, for callers that edit bytes
  // The handle that keeps the bytes alive (tests check what it is).
  const std::shared_ptr<const void>& owner() const { return owner_; }

  friend bool operator==(const SharedBytes& a, const SharedBytes& b) { return a.view() == b.view(); }
  friend bool operator!=(const SharedBytes& a, const SharedBytes& b) { return !(a == b); }

 private:
  explicit SharedBytes(std::shared_ptr<const std::string> s)
      : data_(s->data()), size_(s->size()), owner_(std::move(s)) {}

  const char* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace npuc
