// Darknet .cfg text -> sections. The format is INI-like: `[type]` opens a layer (the first one,
// [net] or [network], holds the input size and training settings), `key=value` lines follow, `#`
// and `;` start comments. Each section remembers its line and every key its own line, so every
// later error (a bad value, a key npuc does not know, a layer it cannot build) names the file and
// the line, as darknet's own parser does not.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::darknet {

struct CfgOption {
  std::string value;
  int line = 0;
};

class CfgSection {
 public:
  CfgSection(std::string file, std::string type, int index, int line)
      : file_(std::move(file)), type_(std::move(type)), index_(index), line_(line) {}

  const std::string& type() const { return type_; }
  // Position among the layers: -1 for [net], 0 for the first layer (darknet's layer numbering).
  int index() const { return index_; }
  int line() const { return line_; }
  // "yolov3.cfg:42: layer 5 [convolutional]": the prefix of every message about this section.
  std::string where() const;
  std::string where(const std::string& key) const;  // with the key's own line

  // Refuses a repeated key in a layer; in [net] the first one wins, as in darknet.
  void add(const std::string& key, std::string value, int line);
  bool has(const std::string& key) const { return options_.count(key) != 0; }

  // Typed getters; a missing key gives the default, a malformed value is a ModelLoadError naming
  // the key, its line and the value. Every key read is marked used (see refuseUnusedKeys).
  int64_t getInt(const std::string& key, int64_t def);
  float getFloat(const std::string& key, float def);
  std::string getString(const std::string& key, const std::string& def);
  std::vector<int64_t> getInts(const std::string& key);  // comma list; the key must be present

  // Keys neither read nor in `ignored` (training-only settings) are refused: an unknown key may
  // change what the layer computes (e.g. a newer darknet's `dilation`), so it is never dropped.
  void refuseUnusedKeys(const std::set<std::string>& ignored) const;

 private:
  const CfgOption* find(const std::string& key);
  [[noreturn]] void badValue(const std::string& key, const std::string& why) const;

  std::string file_;
  std::string type_;
  int index_;
  int line_;
  std::map<std::string, CfgOption> options_;
  std::set<std::string> used_;
};

// Parses the whole text; `file` is the name messages use. Throws ModelLoadError on a line that is
// neither a section, a key=value nor a comment, a key before the first section, a repeated key
// in a layer,
// or a file without sections.
std::vector<CfgSection> parseCfg(const std::string& text, const std::string& file);

}  // namespace npuc::darknet
