// Typed node attributes (the ONNX attribute kinds npuc uses) and a small map over them.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace npuc {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

enum class AttrKind { Int, Float, String, Ints, Floats, Strings, Tensor };
const char* attrKindName(AttrKind k);
inline AttrKind attrKind(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }

// Ordered by name so dumps, digests and exports are deterministic.
class Attributes {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }
  const AttrValue* find(const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, AttrValue>& all() const { return map_; }
  bool empty() const { return map_.empty(); }
  bool operator==(const Attributes& o) const;

  // Typed getters. The one-argument form throws GraphError when missing; all throw GraphError
  // naming the attribute when the stored kind differs. An Int attribute reads as a Float.
  int64_t i(const std::string& name) const;
  int64_t i(const std::string& name, int64_t def) const;
  float f(const std::string& name) const;
  float f(const std::string& name, float def) const;
  const std::string& s(const std::string& name) const;
  std::string s(const std::string& name, const std::string& def) const;
  const std::vector<int64_t>& ints(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name, const std::vector<int64_t>& def) const;
  const std::vector<float>& floats(const std::string& name) const;
  std::vector<float> floats(const std::string& name, const std::vector<float>& def) const;
  const std::vector<std::string>& strings(const std::string& name) const;
  const Tensor& t(const std::string& name) const;

 private:
  template <typename T>
  const T& get(const std::string& name, AttrKind expect) const;
  std::map<std::string, AttrValue> map_;
};

}  // namespace npuc
