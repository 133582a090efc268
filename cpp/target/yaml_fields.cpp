#include "target/yaml_fields.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace npuc {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

void YamlField::fail(const std::string& message) const {
  throw ConfigError(file_ + ": " + (path_.empty() ? std::string("(document)") : path_) + ": " + message);
}

std::string YamlField::childPath(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string YamlField::describe() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing";
  if (node_.IsScalar()) return "'" + node_.Scalar() + "'";
  if (node_.IsSequence()) return "a list";
  return "a map";
}

bool YamlField::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined();
}

YamlField YamlField::at(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a map, got " + describe());
  YAML::Node child = node_[key];
  if (!child.IsDefined()) fail("missing field '" + key + "'");
  return YamlField(child, file_, childPath(key));
}

std::vector<std::string> YamlField::keys() const {
  if (!node_.IsMap()) fail("expected a map, got " + describe());
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

std::vector<YamlField> YamlField::elements() const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe());
  std::vector<YamlField> out;
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

void YamlField::requireOnlyKeys(const std::vector<std::string>& allowed) const {
  for (const std::string& k : keys()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      YamlField(node_[k], file_, childPath(k))
          .fail("unknown field (expected one of: " + joined(allowed) + ")");
  }
}

int64_t YamlField::asInt() const {
  if (node_.IsScalar()) {
    try {
      return node_.as<int64_t>();
    } catch (const YAML::BadConversion&) {
    }
  }
  fail("expected an integer, got " + describe());
}

int64_t YamlField::asPositiveInt() const {
  int64_t v = asInt();
  if (v <= 0) fail("expected a positive integer, got " + std::to_string(v));
  return v;
}

int64_t YamlField::asNonNegativeInt() const {
  int64_t v = asInt();
  if (v < 0) fail("expected a non-negative integer, got " + std::to_string(v));
  return v;
}

double YamlField::asPositiveDouble() const {
  double v = 0;
  bool ok = false;
  if (node_.IsScalar()) {
    try {
      v = node_.as<double>();
      ok = true;
    } catch (const YAML::BadConversion&) {
    }
  }
  if (!ok) fail("expected a number, got " + describe());
  if (!(v > 0)) fail("expected a positive number, got " + node_.Scalar());
  return v;
}

double YamlField::asFraction() const {
  double v = asPositiveDouble();
  if (v > 1) fail("expected a fraction in (0, 1], got " + node_.Scalar());
  return v;
}

bool YamlField::asBool() const {
  if (node_.IsScalar()) {
    try {
      return node_.as<bool>();
    } catch (const YAML::BadConversion&) {
    }
  }
  fail("expected true or false, got " + describe());
}

std::string YamlField::asString() const {
  if (!node_.IsScalar() || node_.Scalar().empty()) fail("expected a non-empty string, got " + describe());
  return node_.Scalar();
}

std::vector<std::string> YamlField::asStringList() const {
  std::vector<std::string> out;
  for (const YamlField& e : elements()) out.push_back(e.asString());
  return out;
}

IntRange YamlField::asRange() const {
  if (!node_.IsSequence() || node_.size() != 2) fail("expected a range [lo, hi], got " + describe());
  std::vector<YamlField> e = elements();
  IntRange r{e[0].asInt(), e[1].asInt()};
  if (r.lo > r.hi) fail("range [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "] is empty");
  return r;
}

YamlField parseYamlDocument(const std::string& text, const std::string& file) {
  try {
    return YamlField(YAML::Load(text), file, "");
  } catch (const YAML::ParserException& e) {
    std::ostringstream msg;
    msg << file << ": line " << e.mark.line + 1 << ": " << e.msg;
    throw ConfigError(msg.str());
  }
}

}  // namespace npuc
