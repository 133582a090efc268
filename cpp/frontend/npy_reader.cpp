// The .npy header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// padded with spaces and ended by '\n'. Only that subset of Python syntax is accepted.
#include "frontend/npy_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "common/error.h"

namespace npuc {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;
// Magic, major and minor version bytes, then a u16 (v1) or u32 (v2, v3) header length.
constexpr size_t kPreludeV1 = kNpyMagicSize + 2 + 2;
constexpr size_t kPreludeV2 = kNpyMagicSize + 2 + 4;
// numpy's NPY_MAXDIMS of the versions that write these files.
constexpr size_t kMaxNpyRank = 32;

[[noreturn]] void fail(const std::string& origin, const std::string& msg) {
  throw InputError("'" + origin + "' is not a readable .npy array: " + msg);
}

// A cursor over the header text with the few Python-literal forms the header uses.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& origin) : text_(text), origin_(origin) {}

  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!consume(c)) fail(origin_, std::string("header: expected '") + c + "' " + what + near());
  }
  std::string quoted(const char* what) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail(origin_, std::string("header: expected a quoted ") + what + near());
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) fail(origin_, std::string("header: unterminated ") + what);
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skipSpace();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      const size_t n = std::strlen(word);
      if (text_.compare(pos_, n, word) == 0) {
        pos_ += n;
        return value;
      }
    }
    fail(origin_, "header: 'fortran_order' is not True or False" + near());
  }
  // A tuple of non-negative integers: (), (3,), (1, 3, 4).
  Shape shape() {
    expect('(', "to open 'shape'");
    Shape dims;
    while (!consume(')')) {
      skipSpace();
      const size_t start = pos_;
      int64_t d = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int digit = text_[pos_++] - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10)
          fail(origin_, "header: a dimension of 'shape' overflows int64");
        d = d * 10 + digit;
      }
      if (pos_ == start)
        fail(origin_, "header: 'shape' holds something other than non-negative integers" + near());
      dims.push_back(d);
      if (dims.size() > kMaxNpyRank)
        fail(origin_, "header: 'shape' has more than " + std::to_string(kMaxNpyRank) + " dimensions");
      if (!consume(',')) {
        expect(')', "to close 'shape'");
        break;
      }
    }
    return dims;
  }
  bool atEnd() {
    skipSpace();
    return pos_ == text_.size();
  }

 private:
  std::string near() const { return " (at header character " + std::to_string(pos_) + ")"; }
  const std::string& text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

// '<f4' -> Float32, little-endian. Byte order '|' (not applicable) and '=' (native) are native.
DType parseDescr(const std::string& descr, bool& big_endian, const std::string& origin) {
  if (descr.size() < 3 || std::string("<>|=").find(descr[0]) == std::string::npos)
    fail(origin, "dtype '" + descr + "' is not a simple numeric dtype");
  const std::string kind_size = descr.substr(1);
  static const std::pair<const char*, DType> kTypes[] = {
      {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64}, {"i1", DType::Int8},
      {"i2", DType::Int16},   {"i4", DType::Int32},   {"i8", DType::Int64},   {"u1", DType::UInt8},
      {"u2", DType::UInt16},  {"u4", DType::UInt32},  {"u8", DType::UInt64},  {"b1", DType::Bool}};
  for (const auto& [name, dtype] : kTypes) {
    if (kind_size == name) {
      big_endian = descr[0] == '>' && dtypeSize(dtype) > 1;
      return dtype;
    }
  }
  fail(origin, "dtype '" + descr + "' is not supported (numeric and bool dtypes only)");
}

uint64_t readLe(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Header length and where the header text starts, from the bytes after the magic.
void readPrelude(const uint8_t* data, size_t size, const std::string& origin, size_t& text_offset,
                 size_t& text_size) {
  if (size < kPreludeV1 || std::memcmp(data, kNpyMagic, kNpyMagicSize) != 0)
    fail(origin, "it does not start with the .npy magic \"\\x93NUMPY\"");
  const int major = data[kNpyMagicSize];
  const int minor = data[kNpyMagicSize + 1];
  if (major < 1 || major > 3 || minor != 0)
    fail(origin,
         "format version " + std::to_string(major) + "." + std::to_string(minor) + " is not 1.0, 2.0 or 3.0");
  if (major == 1) {
    text_offset = kPreludeV1;
    text_size = readLe(data + kNpyMagicSize + 2, 2);
  } else {
    if (size < kPreludeV2) fail(origin, "truncated in the header length");
    text_offset = kPreludeV2;
    text_size = readLe(data + kNpyMagicSize + 2, 4);
  }
  if (text_size > kMaxNpyHeaderBytes)
    fail(origin, "header of " + std::to_string(text_size) + " bytes is longer than the " +
                     std::to_string(kMaxNpyHeaderBytes) + " allowed");
}

NpyHeader parseHeaderText(const std::string& text, size_t data_offset, const std::string& origin) {
  NpyHeader h;
  h.data_offset = data_offset;
  HeaderParser p(text, origin);
  bool has_descr = false, has_order = false, has_shape = false;
  p.expect('{', "at the start of the header");
  while (!p.consume('}')) {
    const std::string key = p.quoted("key");
    p.expect(':', "after key '" + key + "'");
    bool* seen = nullptr;
    if (key == "descr") {
      h.dtype = parseDescr(p.quoted("'descr'"), h.big_endian, origin);
      seen = &has_descr;
    } else if (key == "fortran_order") {
      h.fortran_order = p.boolean();
      seen = &has_order;
    } else if (key == "shape") {
      h.shape = p.shape();
      seen = &has_shape;
    } else {
      fail(origin, "header: unexpected key '" + key + "' (only 'descr', 'fortran_order', 'shape')");
    }
    if (*seen) fail(origin, "header: key '" + key + "' appears twice");
    *seen = true;
    if (!p.consume(',')) {
      p.expect('}', "to close the header");
      break;
    }
  }
  if (!p.atEnd()) fail(origin, "header: text after the closing '}'");
  if (!has_descr || !has_order || !has_shape)
    fail(origin, std::string("header lacks the key '") +
                     (!has_descr   ? "descr"
                      : !has_order ? "fortran_order"
                                   : "shape") +
                     "'");
  // Element count and byte size, refused on overflow or beyond what a tensor may hold.
  uint64_t count = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && count > uint64_t(kMaxTensorBytes) / uint64_t(d))
      fail(origin, "shape " + shapeStr(h.shape) + " holds more than " + std::to_string(kMaxTensorBytes) +
                       " elements");
    count *= uint64_t(d);
  }
  const uint64_t bytes = count * dtypeSize(h.dtype);
  if (bytes > uint64_t(kMaxTensorBytes))
    fail(origin, "shape " + shapeStr(h.shape) + " of " + dtypeName(h.dtype) + " needs " +
                     std::to_string(bytes) + " bytes, more than the " + std::to_string(kMaxTensorBytes) +
                     " a tensor may hold");
  h.data_bytes = static_cast<size_t>(bytes);
  return h;
}

void checkDataSize(const NpyHeader& h, uint64_t file_size, const std::string& origin) {
  const uint64_t have = file_size - h.data_offset;
  if (have != h.data_bytes)
    fail(origin, std::string(have < h.data_bytes ? "truncated" : "trailing bytes") +
                     ": the header declares " + std::to_string(h.data_bytes) + " data bytes (" +
                     dtypeName(h.dtype) + " " + shapeStr(h.shape) + "), the file has " +
                     std::to_string(have));
}

// In place: big-endian elements to native (little-endian) order.
void swapBytes(Tensor& t) {
  const size_t width = dtypeSize(t.dtype());
  uint8_t* p = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); i += width) std::reverse(p + i, p + i + width);
}

// Fortran-order data (first index fastest) reordered into C order.
Tensor toCOrder(const Tensor& fortran) {
  Tensor out(fortran.dtype(), fortran.shape());
  const Shape& shape = fortran.shape();
  const size_t rank = shape.size();
  const size_t width = dtypeSize(fortran.dtype());
  std::vector<int64_t> fstride(rank, 1);
  for (size_t k = 1; k < rank; ++k) fstride[k] = fstride[k - 1] * shape[k - 1];
  std::vector<int64_t> index(rank, 0);  // C-order odometer
  const uint8_t* src = static_cast<const uint8_t*>(fortran.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  const int64_t n = fortran.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t k = 0; k < rank; ++k) offset += index[k] * fstride[k];
    std::memcpy(dst + size_t(i) * width, src + size_t(offset) * width, width);
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

Tensor finish(Tensor t, const NpyHeader& h) {
  if (h.big_endian) swapBytes(t);
  if (h.fortran_order && h.shape.size() > 1) return toCOrder(t);
  return t;
}

}  // namespace

NpyHeader parseNpyHeader(const uint8_t* data, size_t size, const std::string& origin) {
  size_t text_offset = 0, text_size = 0;
  readPrelude(data, size, origin, text_offset, text_size);
  if (size - text_offset < text_size)
    fail(origin, "truncated: the header declares " + std::to_string(text_size) + " bytes, " +
                     std::to_string(size - text_offset) + " follow");
  const std::string text(reinterpret_cast<const char*>(data + text_offset), text_size);
  return parseHeaderText(text, text_offset + text_size, origin);
}

Tensor decodeNpy(const uint8_t* data, size_t size, const std::string& origin) {
  const NpyHeader h = parseNpyHeader(data, size, origin);
  checkDataSize(h, size, origin);
  Tensor t(h.dtype, h.shape);
  if (h.data_bytes) std::memcpy(t.raw(), data + h.data_offset, h.data_bytes);
  return finish(std::move(t), h);
}

Tensor readNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError("cannot open '" + path + "'");
  const std::streamoff file_size = in.tellg();
  if (file_size < 0) throw InputError("cannot read '" + path + "'");
  in.seekg(0);
  // The prelude and header only: the data is read once its declared size has been checked.
  std::vector<uint8_t> head(std::min<size_t>(size_t(file_size), kPreludeV2 + kMaxNpyHeaderBytes));
  if (!in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size())))
    throw InputError("cannot read '" + path + "'");
  const NpyHeader h = parseNpyHeader(head.data(), head.size(), path);
  checkDataSize(h, uint64_t(file_size), path);
  Tensor t(h.dtype, h.shape);
  in.seekg(std::streamoff(h.data_offset));
  if (h.data_bytes && !in.read(static_cast<char*>(t.raw()), std::streamsize(h.data_bytes)))
    throw InputError("cannot read the data of '" + path + "'");
  return finish(std::move(t), h);
}

}  // namespace npuc
