#include "target/build_options.h"

#include <cctype>

#include "common/error.h"

namespace npuc {

namespace {

// Reads the Python repr of a str -> str dict, the form the Toolkit records op_target in.
// Escapes other than \' \" \\ are not produced for node names and are refused.
class DictReprParser {
 public:
  explicit DictReprParser(const std::string& text) : s_(text) {}
  OpTargetMap parse() {
    OpTargetMap out;
    expect('{');
    if (peek() == '}') return finish(out);
    while (true) {
      std::string key = quoted();
      expect(':');
      out[key] = quoted();
      if (peek() == '}') return finish(out);
      expect(',');
    }
  }

 private:
  OpTargetMap finish(OpTargetMap& out) {
    expect('}');
    if (peek() != '\0') fail("trailing characters");
    return out;
  }
  char peek() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    std::string out;
    for (++pos_; pos_ < s_.size() && s_[pos_] != q; ++pos_) {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"' && s_[pos_] != '\\'))
          fail("unsupported escape");
      }
      out += s_[pos_];
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError("build option op_target = " + s_ + ": " + why + " at character " +
                      std::to_string(pos_));
  }
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

OpTargetMap opTargetFromOption(const std::string& repr) {
  return DictReprParser(repr).parse();
}

OpTargetMap opTargetOfBuild(const BuildOptions& options) {
  auto it = options.find("op_target");
  return it == options.end() ? OpTargetMap{} : opTargetFromOption(it->second);
}

PartitionReport placementOfBuild(const Graph& graph, const SocProfile& soc, const BuildOptions& options) {
  return partitionGraph(graph, soc, opTargetOfBuild(options));
}

PartitionReport placementOfRecordedBuild(const Graph& graph, const SocProfile& soc,
                                         const BuildOptions& options) {
  try {
    return placementOfBuild(graph, soc, options);
  } catch (const ConfigError& e) {
    throw BlobError(std::string("the blob's recorded placement does not apply to its graph: ") + e.what());
  }
}

}  // namespace npuc
