#include "ir/attribute.h"

namespace npuc {

const char* attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
    case AttrKind::Strings: return "strings";
    case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

bool Attributes::operator==(const Attributes& o) const { return map_ == o.map_; }

template <typename T>
const T& Attributes::get(const std::string& name, AttrKind expect) const {
  auto it = map_.find(name);
  if (it == map_.end()) throw GraphError("missing required attribute '" + name + "'");
  if (attrKind(it->second) != expect) {
    throw GraphError("attribute '" + name + "' is " + attrKindName(attrKind(it->second)) + ", expected " +
                     attrKindName(expect));
  }
  return std::get<T>(it->second);
}

int64_t Attributes::i(const std::string& name) const { return get<int64_t>(name, AttrKind::Int); }
int64_t Attributes::i(const std::string& name, int64_t def) const { return has(name) ? i(name) : def; }
float Attributes::f(const std::string& name) const {
  auto it = map_.find(name);
  if (it != map_.end() && attrKind(it->second) == AttrKind::Int) return static_cast<float>(std::get<int64_t>(it->second));
  return get<float>(name, AttrKind::Float);
}
float Attributes::f(const std::string& name, float def) const { return has(name) ? f(name) : def; }
const std::string& Attributes::s(const std::string& name) const { return get<std::string>(name, AttrKind::String); }
std::string Attributes::s(const std::string& name, const std::string& def) const { return has(name) ? s(name) : def; }
const std::vector<int64_t>& Attributes::ints(const std::string& name) const {
  return get<std::vector<int64_t>>(name, AttrKind::Ints);
}
std::vector<int64_t> Attributes::ints(const std::string& name, const std::vector<int64_t>& def) const {
  return has(name) ? ints(name) : def;
}
const std::vector<float>& Attributes::floats(const std::string& name) const {
  return get<std::vector<float>>(name, AttrKind::Floats);
}
std::vector<float> Attributes::floats(const std::string& name, const std::vector<float>& def) const {
  return has(name) ? floats(name) : def;
}
const std::vector<std::string>& Attributes::strings(const std::string& name) const {
  return get<std::vector<std::string>>(name, AttrKind::Strings);
}
const Tensor& Attributes::t(const std::string& name) const { return get<Tensor>(name, AttrKind::Tensor); }

}  // namespace npuc
