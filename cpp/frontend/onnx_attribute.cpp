#include "frontend/onnx_attribute.h"

#include <unordered_map>

namespace npuc {

namespace {

using AP = onnx::AttributeProto;

// Old exporters left `type` unset; the filled field says what the attribute is.
AP::AttributeType effectiveType(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

}  // namespace

AttrValue attrFromProto(const AP& a, const ExternalDataPolicy& policy, const std::string& where) {
  switch (effectiveType(a)) {
    case AP::INT: return a.i();
    case AP::FLOAT: return a.f();
    case AP::STRING: return a.s();
    case AP::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case AP::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case AP::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case AP::TENSOR: return tensorFromProto(a.t(), policy);
    // A control-flow sub-graph stays serialized (frontend/onnx_subgraph.h says why).
    case AP::GRAPH: return a.g().SerializeAsString();
    case AP::GRAPHS:
      throw UnsupportedOpError(where + ": attribute '" + a.name() +
                               "' holds a list of sub-graphs, which no ONNX op npuc supports uses");
    default: break;
  }
  throw ModelLoadError(where + ": attribute '" + a.name() + "' has a kind npuc cannot read (type code " +
                       std::to_string(static_cast<int>(a.type())) + ")");
}

void attrToProto(const std::string& name, const AttrValue& value, AP* a) {
  a->set_name(name);
  struct Writer {
    AP* a;
    void operator()(int64_t v) const {
      a->set_type(AP::INT);
      a->set_i(v);
    }
    void operator()(float v) const {
      a->set_type(AP::FLOAT);
      a->set_f(v);
    }
    void operator()(const std::string& v) const {
      a->set_type(AP::STRING);
      a->set_s(v);
    }
    void operator()(const std::vector<int64_t>& v) const {
      a->set_type(AP::INTS);
      for (int64_t x : v) a->add_ints(x);
    }
    void operator()(const std::vector<float>& v) const {
      a->set_type(AP::FLOATS);
      for (float x : v) a->add_floats(x);
    }
    void operator()(const std::vector<std::string>& v) const {
      a->set_type(AP::STRINGS);
      for (const auto& x : v) a->add_strings(x);
    }
    void operator()(const Tensor& t) const {
      a->set_type(AP::TENSOR);
      tensorToProto(t, a->mutable_t());
    }
  };
  std::visit(Writer{a}, value);
}

std::optional<AttrKind> expectedAttrKind(const std::string& op_type, const std::string& attr) {
  // The few attributes whose kind depends on the op.
  static const std::unordered_map<std::string, AttrKind> by_op = {
      {"Pad/value", AttrKind::Float},        // Pad-2's constant fill value
      {"Constant/value", AttrKind::Tensor},  //
      {"ConstantOfShape/value", AttrKind::Tensor},
      {"LRN/size", AttrKind::Int},
  };
  // ONNX spells the same concept the same way across ops; these are the kinds it uses.
  static const std::unordered_map<std::string, AttrKind> by_name = {
      {"axis", AttrKind::Int},
      {"keepdims", AttrKind::Int},
      {"group", AttrKind::Int},
      {"to", AttrKind::Int},
      {"k", AttrKind::Int},
      {"transA", AttrKind::Int},
      {"transB", AttrKind::Int},
      {"ceil_mode", AttrKind::Int},
      {"count_include_pad", AttrKind::Int},
      {"storage_order", AttrKind::Int},
      {"select_last_index", AttrKind::Int},
      {"noop_with_empty_axes", AttrKind::Int},
      {"largest", AttrKind::Int},
      {"sorted", AttrKind::Int},
      {"allowzero", AttrKind::Int},
      {"batch_dims", AttrKind::Int},
      {"num_outputs", AttrKind::Int},
      {"exclude_outside", AttrKind::Int},
      {"value_int", AttrKind::Int},
      {"alpha", AttrKind::Float},
      {"beta", AttrKind::Float},
      {"gamma", AttrKind::Float},
      {"epsilon", AttrKind::Float},
      {"momentum", AttrKind::Float},
      {"ratio", AttrKind::Float},
      {"min", AttrKind::Float},
      {"max", AttrKind::Float},
      {"bias", AttrKind::Float},
      {"lambd", AttrKind::Float},
      {"cubic_coeff_a", AttrKind::Float},
      {"extrapolation_value", AttrKind::Float},
      {"value_float", AttrKind::Float},
      {"mode", AttrKind::String},
      {"auto_pad", AttrKind::String},
      {"coordinate_transformation_mode", AttrKind::String},
      {"nearest_mode", AttrKind::String},
      {"value_string", AttrKind::String},
      {"axes", AttrKind::Ints},
      {"perm", AttrKind::Ints},
      {"kernel_shape", AttrKind::Ints},
      {"pads", AttrKind::Ints},
      {"strides", AttrKind::Ints},
      {"dilations", AttrKind::Ints},
      {"output_padding", AttrKind::Ints},
      {"output_shape", AttrKind::Ints},
      {"starts", AttrKind::Ints},
      {"ends", AttrKind::Ints},
      {"split", AttrKind::Ints},
      {"value_ints", AttrKind::Ints},
      {"scales", AttrKind::Floats},
      {"value_floats", AttrKind::Floats},
  };
  if (auto it = by_op.find(op_type + "/" + attr); it != by_op.end()) return it->second;
  if (auto it = by_name.find(attr); it != by_name.end()) return it->second;
  return std::nullopt;
}

}  // namespace npuc
