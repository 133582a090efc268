#include "lower/program_sections.h"

#include <cctype>

#include "common/error.h"
#include "lower/lower.h"
#include "lower/program_codec.h"
#include "target/soc_profile.h"

namespace npuc::lower {

namespace {

// Reads the Python repr of a str -> str dict ("{'conv1': 'cpu', \"it's\": 'npu'}"), the form the
// Toolkit records op_target in; the build options are the blob's record of how it was built, so
// the program is lowered from them. Escapes other than \' \" \\ are not produced for node
// names and are refused.
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

void appendProgramSections(const Graph& graph, const quant::QuantPlan* plan,
                           blob::BlobWriteOptions* options) {
  LowerOptions lo;
  auto target = options->options.find("op_target");
  if (target != options->options.end()) lo.op_target = opTargetFromOption(target->second);
  lo.plan = plan;
  auto it = options->options.find("single_core_mode");
  lo.single_core_mode = it != options->options.end() && it->second == "True";
  const LoweredProgram program = lowerGraph(graph, socProfile(options->soc), lo);
  for (blob::ExtraSection& s : programExtraSections(program)) options->extra_sections.push_back(std::move(s));
}

std::optional<LoweredProgram> readProgram(const blob::LoadedBlob& loaded) {
  ProgramSections sections;
  if (!findProgramSections(loaded.extra_sections, &sections)) return std::nullopt;
  LoweredProgram program = decodeProgram(sections);
  verifyProgram(program, *loaded.graph);
  return program;
}

}  // namespace npuc::lower
