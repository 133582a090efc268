#include "frontend/darknet/cfg_parse.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/error.h"

namespace npuc::darknet {

namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Values are shown in messages; a fuzzed file may hold a megabyte on one line.
std::string shownValue(const std::string& v) {
  return v.size() <= 40 ? "'" + v + "'" : "'" + v.substr(0, 40) + "...'";
}

}  // namespace

std::string CfgSection::where() const {
  std::string s = file_ + ":" + std::to_string(line_) + ": ";
  return s + (index_ < 0 ? "[" + type_ + "]" : "layer " + std::to_string(index_) + " [" + type_ + "]");
}

std::string CfgSection::where(const std::string& key) const {
  auto it = options_.find(key);
  const int line = it == options_.end() ? line_ : it->second.line;
  std::string s = file_ + ":" + std::to_string(line) + ": ";
  return s + (index_ < 0 ? "[" + type_ + "]" : "layer " + std::to_string(index_) + " [" + type_ + "]");
}

void CfgSection::add(const std::string& key, std::string value, int line) {
  auto it = options_.find(key);
  if (it != options_.end()) {
    // [net] sections repeat training keys on purpose (a "Testing" and a "Training" batch=, one
    // commented out by hand): darknet reads the first, and so does npuc. In a layer a repeated key
    // is a mistake whose intended value is not knowable.
    if (index_ < 0) return;
    throw ModelLoadError(file_ + ":" + std::to_string(line) + ": key '" + key + "' of " +
                         (index_ < 0 ? "[" + type_ + "]" : "layer " + std::to_string(index_) + " [" + type_ + "]") +
                         " is repeated (first at line " + std::to_string(it->second.line) + ")");
  }
  options_[key] = CfgOption{std::move(value), line};
}

const CfgOption* CfgSection::find(const std::string& key) {
  auto it = options_.find(key);
  if (it == options_.end()) return nullptr;
  used_.insert(key);
  return &it->second;
}

void CfgSection::badValue(const std::string& key, const std::string& why) const {
  throw ModelLoadError(where(key) + ": " + key + "=" + shownValue(options_.at(key).value) + " " + why);
}

int64_t CfgSection::getInt(const std::string& key, int64_t def) {
  const CfgOption* o = find(key);
  if (!o) return def;
  const std::string v = trim(o->value);
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) badValue(key, "is not an integer");
  return x;
}

float CfgSection::getFloat(const std::string& key, float def) {
  const CfgOption* o = find(key);
  if (!o) return def;
  const std::string v = trim(o->value);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) badValue(key, "is not a finite number");
  return static_cast<float>(x);
}

std::string CfgSection::getString(const std::string& key, const std::string& def) {
  const CfgOption* o = find(key);
  return o ? trim(o->value) : def;
}

std::vector<int64_t> CfgSection::getInts(const std::string& key) {
  const CfgOption* o = find(key);
  if (!o) throw ModelLoadError(where() + ": the key '" + key + "' is required");
  std::vector<int64_t> out;
  std::stringstream ss(o->value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE) badValue(key, "is not a comma-separated list of integers");
    out.push_back(x);
  }
  if (out.empty()) badValue(key, "is empty");
  return out;
}

void CfgSection::refuseUnusedKeys(const std::set<std::string>& ignored) const {
  for (const auto& [key, opt] : options_) {
    if (used_.count(key) || ignored.count(key)) continue;
    throw ModelLoadError(where(key) + ": unknown key '" + key + "' (npuc does not know what it changes, so it "
                         "refuses the layer rather than ignore it)");
  }
}

std::vector<CfgSection> parseCfg(const std::string& text, const std::string& file) {
  std::vector<CfgSection> sections;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  int layer = -1;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const std::string at = file + ":" + std::to_string(line_no) + ": ";
    if (line[0] == '[') {
      if (line.back() != ']' || line.size() < 3) throw ModelLoadError(at + "malformed section header " + shownValue(line));
      const std::string type = trim(line.substr(1, line.size() - 2));
      if (type.empty()) throw ModelLoadError(at + "empty section name");
      // The first section is the network's ([net] or [network]); the layers count from 0 after it.
      const bool is_net = sections.empty();
      sections.emplace_back(file, type, is_net ? -1 : layer, line_no);
      ++layer;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw ModelLoadError(at + "expected 'key=value' or '[section]', found " + shownValue(line));
    const std::string key = trim(line.substr(0, eq));
    if (key.empty()) throw ModelLoadError(at + "a value without a key: " + shownValue(line));
    if (sections.empty()) throw ModelLoadError(at + "key '" + key + "' appears before the first [section]");
    sections.back().add(key, line.substr(eq + 1), line_no);
  }
  if (sections.empty()) throw ModelLoadError(file + ": no [net] section: not a darknet .cfg file");
  return sections;
}

}  // namespace npuc::darknet
