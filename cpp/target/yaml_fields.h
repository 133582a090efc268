// Typed, path-tracking access to a YAML document, so every problem in a SoC profile is reported
// as "<file>: <field.path>: <what is wrong>" and a typo'd key is refused instead of ignored.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npuc {

// An inclusive integer range written in YAML as [lo, hi].
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 0;
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
  bool operator==(const IntRange& o) const { return lo == o.lo && hi == o.hi; }
};

// One node of a YAML document together with where it sits (file name and dotted field path).
class YamlField {
 public:
  YamlField(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  const YAML::Node& node() const { return node_; }
  bool isMap() const { return node_.IsMap(); }
  bool isSequence() const { return node_.IsSequence(); }
  bool isScalar() const { return node_.IsScalar(); }

  // Required child of a map; ConfigError "missing field" when absent.
  YamlField at(const std::string& key) const;
  bool has(const std::string& key) const;
  // Keys of a map in document order (ConfigError when this is not a map).
  std::vector<std::string> keys() const;
  // Elements of a sequence (ConfigError when this is not a sequence).
  std::vector<YamlField> elements() const;
  // Refuses any key not in `allowed` (catches typos such as "corse" for "cores").
  void requireOnlyKeys(const std::vector<std::string>& allowed) const;

  int64_t asInt() const;
  int64_t asPositiveInt() const;     // > 0
  int64_t asNonNegativeInt() const;  // >= 0
  double asPositiveDouble() const;
  double asFraction() const;  // in (0, 1]
  bool asBool() const;
  std::string asString() const;
  std::vector<std::string> asStringList() const;
  IntRange asRange() const;  // [lo, hi] with lo <= hi

  // Throws ConfigError "<file>: <path>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::string childPath(const std::string& key) const;
  // The scalar text for messages ("got 'three'"), or the node kind for non-scalars.
  std::string describe() const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
};

// Parses YAML text; a syntax error becomes ConfigError "<file>: line N: ...".
YamlField parseYamlDocument(const std::string& text, const std::string& file);

}  // namespace npuc
