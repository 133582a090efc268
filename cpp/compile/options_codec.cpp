#include "compile/options_codec.h"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>

#include "blob/blob_limits.h"
#include "common/error.h"
#include "compile/py_literal.h"

namespace npuc {

RecordedOptions encodeCompileOptions(const CompileOptions& o) {
  using pyliteral::repr;
  RecordedOptions out;
  out["optimization_level"] = repr(static_cast<long long>(o.optimization_level));
  out["quantized"] = repr(o.quantized);
  out["single_core_mode"] = repr(o.single_core_mode);
  if (o.quantized) {
    out["quantized_dtype"] = repr(std::string(quantDTypeName(o.quantized_dtype)));
    out["quantized_algorithm"] = repr(std::string(quantAlgorithmName(o.quantized_algorithm)));
    out["quantized_method"] = repr(std::string(quantMethodName(o.quantized_method)));
  }
  if (o.node_order != NodeOrder::MemoryAware)
    out["node_order"] = repr(std::string(nodeOrderName(o.node_order)));
  if (!o.concat_in_place) out["concat_in_place"] = repr(o.concat_in_place);
  if (!o.custom_string.empty()) out["custom_string"] = repr(o.custom_string);
  if (!o.disable_passes.empty()) out["disable_passes"] = repr(o.disable_passes);
  if (!o.hybrid_layers.empty()) out["hybrid_layers"] = repr(o.hybrid_layers);
  if (!o.op_target.empty()) out["op_target"] = repr(o.op_target);
  if (!o.mean_values.empty()) out["mean_values"] = repr(o.mean_values);
  if (!o.std_values.empty()) out["std_values"] = repr(o.std_values);
  return out;
}

void checkRecordedOptionLimits(const RecordedOptions& recorded) {
  for (const auto& [key, text] : recorded) {
    if (key.size() > blob::kMaxNameBytes)
      throw ConfigError(fmt::format("build option key '{}...' is {} bytes, more than the .npub limit of {}",
                                    key.substr(0, 40), key.size(), blob::kMaxNameBytes));
    if (text.size() > blob::kMaxTextBytes)
      throw ConfigError(
          fmt::format("build option {} is {} bytes as the blob records it (its Python literal), "
                      "more than the .npub limit of {} bytes",
                      key, text.size(), blob::kMaxTextBytes));
  }
}

namespace {

template <typename E>
E enumOf(const std::string& text, std::optional<E> (*fromName)(const std::string&)) {
  const std::string name = pyliteral::readString(text);
  if (std::optional<E> v = fromName(name)) return *v;
  throw std::invalid_argument("unknown value '" + name + "'");
}

}  // namespace

CompileOptions decodeCompileOptions(const RecordedOptions& recorded, const std::string& origin) {
  CompileOptions o;
  const std::map<std::string, std::function<void(const std::string&)>> readers = {
      {"optimization_level",
       [&](const std::string& t) { o.optimization_level = static_cast<int>(pyliteral::readInt(t)); }},
      {"quantized", [&](const std::string& t) { o.quantized = pyliteral::readBool(t); }},
      {"single_core_mode", [&](const std::string& t) { o.single_core_mode = pyliteral::readBool(t); }},
      {"quantized_dtype", [&](const std::string& t) { o.quantized_dtype = enumOf(t, quantDTypeFromName); }},
      {"quantized_algorithm",
       [&](const std::string& t) { o.quantized_algorithm = enumOf(t, quantAlgorithmFromName); }},
      {"quantized_method",
       [&](const std::string& t) { o.quantized_method = enumOf(t, quantMethodFromName); }},
      {"node_order", [&](const std::string& t) { o.node_order = enumOf(t, nodeOrderFromName); }},
      {"concat_in_place", [&](const std::string& t) { o.concat_in_place = pyliteral::readBool(t); }},
      {"custom_string", [&](const std::string& t) { o.custom_string = pyliteral::readString(t); }},
      {"disable_passes", [&](const std::string& t) { o.disable_passes = pyliteral::readStringList(t); }},
      {"hybrid_layers", [&](const std::string& t) { o.hybrid_layers = pyliteral::readStringList(t); }},
      {"op_target", [&](const std::string& t) { o.op_target = pyliteral::readStringDict(t); }},
      {"mean_values", [&](const std::string& t) { o.mean_values = pyliteral::readFloatMatrix(t); }},
      {"std_values", [&](const std::string& t) { o.std_values = pyliteral::readFloatMatrix(t); }},
  };
  for (const auto& [key, text] : recorded) {
    auto it = readers.find(key);
    if (it == readers.end()) continue;
    try {
      it->second(text);
    } catch (const std::invalid_argument& e) {
      throw BlobError("blob '" + origin + "': recorded build option " + key + " = " + text.substr(0, 200) +
                      ": " + e.what());
    }
  }
  for (const auto& [node, device] : o.op_target)
    if (device != "cpu" && device != "npu")
      throw BlobError("blob '" + origin + "': recorded op_target sends node '" + node + "' to '" + device +
                      "' (not npu or cpu)");
  return o;
}

}  // namespace npuc
