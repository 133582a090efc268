#include "compile/py_literal.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace npuc::pyliteral {

std::string repr(bool v) {
  return v ? "True" : "False";
}

std::string repr(long long v) {
  return std::to_string(v);
}

std::string repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest digits that round-trip, as d.ddde[+-]XX; then laid out the way CPython's float_repr
  // does: positional for exponents in [-4, 16), else d.ddde[+-]XX with at least two exponent digits.
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  const bool negative = s[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  const int exp = std::stoi(s.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    const std::string mag = std::to_string(exp < 0 ? -exp : exp);
    out += std::string("e") + (exp < 0 ? "-" : "+") + (mag.size() < 2 ? "0" : "") + mag;
  } else if (exp >= 0) {
    const size_t int_digits = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_digits)
      out += digits + std::string(int_digits - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
  } else {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  }
  return out;
}

std::string repr(const std::string& s) {
  // CPython picks the single quote unless the text holds one and no double quote.
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;  // printable ASCII, or a UTF-8 byte of a non-ASCII character
    }
  }
  return out + quote;
}

namespace {

template <typename T>
std::string listRepr(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + repr(v[i]);
  return out + "]";
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A cursor over one literal; every read skips the blanks before it.
class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  template <typename F>
  auto whole(F read) {
    auto v = read();
    if (peek() != '\0') fail("trailing characters");
    return v;
  }

  char peek() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool boolean() {
    peek();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      const std::string w(word);
      if (s_.compare(pos_, w.size(), w) == 0) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  // The text of a number ([-+]digits[.digits][e[-+]digits]).
  std::string numberText() {
    peek();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      ++pos_;
    if (start == pos_) fail("expected a number");
    return s_.substr(start, pos_ - start);
  }
  long long integer() {
    const size_t at = pos_;
    const std::string t = numberText();
    long long v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) failAt("expected an integer", at);
    return v;
  }
  double real() {
    const size_t at = pos_;
    const std::string t = numberText();
    double v = 0;
    const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
    const auto r = std::from_chars(begin, t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) failAt("expected a number", at);
    return v;
  }
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    std::string out;
    for (++pos_; pos_ < s_.size() && s_[pos_] != q; ++pos_) {
      if (s_[pos_] != '\\') {
        out += s_[pos_];
        continue;
      }
      if (++pos_ >= s_.size()) break;
      switch (s_[pos_]) {
        case '\\':
        case '\'':
        case '"': out += s_[pos_]; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'x': appendUtf8(out, hexDigits(2)); break;
        case 'u': appendUtf8(out, hexDigits(4)); break;
        case 'U': appendUtf8(out, hexDigits(8)); break;
        default: fail("unsupported escape");
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  template <typename F>
  auto list(F item) {
    std::vector<decltype(item())> out;
    expect('[');
    while (peek() != ']') {
      out.push_back(item());
      if (peek() != ']') expect(',');
    }
    ++pos_;
    return out;
  }
  std::map<std::string, std::string> dict() {
    std::map<std::string, std::string> out;
    expect('{');
    while (peek() != '}') {
      std::string key = string();
      expect(':');
      out[key] = string();
      if (peek() != '}') expect(',');
    }
    ++pos_;
    return out;
  }

 private:
  uint32_t hexDigits(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (++pos_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_]))) fail("bad hex escape");
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos_])));
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (v > 0x10FFFF) fail("escape beyond U+10FFFF");
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const { failAt(why, pos_); }
  [[noreturn]] void failAt(const std::string& why, size_t at) const {
    throw std::invalid_argument(why + " at character " + std::to_string(at));
  }
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::string repr(const std::vector<std::string>& v) {
  return listRepr(v);
}

std::string repr(const std::vector<std::vector<double>>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + listRepr(v[i]);
  return out + "]";
}

std::string repr(const std::map<std::string, std::string>& v) {
  std::string out = "{";
  for (const auto& [key, value] : v) out += (out.size() > 1 ? ", " : "") + repr(key) + ": " + repr(value);
  return out + "}";
}

bool readBool(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.boolean(); });
}

long long readInt(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.integer(); });
}

std::string readString(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.string(); });
}

std::vector<std::string> readStringList(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.list([&] { return r.string(); }); });
}

std::vector<std::vector<double>> readFloatMatrix(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.list([&] { return r.list([&] { return r.real(); }); }); });
}

std::map<std::string, std::string> readStringDict(const std::string& text) {
  Reader r(text);
  return r.whole([&] { return r.dict(); });
}

}  // namespace npuc::pyliteral
