#include "frontend/tflite/tflite_import.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "frontend/error_prefix.h"
#include "frontend/tflite/tflite_builder.h"
#include "frontend/tflite/tflite_file.h"
#include "frontend/tflite/tflite_ops.h"

namespace npuc {

namespace {

using tflite::Builder;
using tflite::TfliteFile;

std::string readFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ModelLoadError(path + ": cannot open the TFLite model: no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelLoadError(path + ": cannot open the TFLite model");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ModelLoadError(path + ": read error");
  return ss.str();
}

std::string supportedList() {
  std::string list;
  for (const std::string& n : tflite::supportedOpNames()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

void convertOperators(const TfliteFile& f, Builder& b) {
  const auto* ops = f.subgraph().operators();
  if (!ops) return;
  for (uint32_t i = 0; i < ops->size(); ++i) {
    const tflite::fb::Operator& op = *ops->Get(i);
    b.beginOp(static_cast<int>(i), op);
    const int32_t code = f.builtinCode(op, static_cast<int>(i));
    tflite::OpConverter convert = code == tflite::fb::BuiltinOperator_CUSTOM
                                      ? tflite::findCustomConverter(f.customCode(op))
                                      : tflite::findBuiltinConverter(code);
    if (!convert) b.unsupported("TFLite op " + b.opName() + " is not supported (npuc reads " + supportedList() + ")");
    convert(b);
  }
}

std::string stem(const std::string& name) {
  const std::string s = std::filesystem::path(name).stem().string();
  return s.empty() ? "tflite" : s;
}

}  // namespace

TfliteImport importTfliteBytes(const std::string& bytes, const TfliteImportOptions& opts, const std::string& name) {
  TfliteFile f(bytes, name);
  TfliteImport out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  g.name = stem(name);
  g.metadata["producer"] = "tflite (npuc frontend)";
  {
    Builder b(f, g, opts.input_is_nchw);
    b.declareInputs();
    convertOperators(f, b);
    b.declareOutputs();
    g.removeUnusedValues();  // the folded float16 weights' DEQUANTIZE inputs, unused constants
    for (auto& [n, r] : b.rangesByName()) out.ranges[n] = {r.min, r.max, r.scale, r.zero_point, r.dtype};
    for (auto& [n, w] : b.weightScalesByName()) out.weight_scales[n] = {w.scales, w.axis};
  }
  try {
    finishImport(g, opts.base);  // the errors above name the file themselves; the tail's do not
  } catch (const Error&) {
    rethrowWithPrefix(name + ": ");
  }
  // Folding may have removed values: keep only the ranges of what is left.
  for (auto it = out.ranges.begin(); it != out.ranges.end();) it = g.findValue(it->first) ? std::next(it) : out.ranges.erase(it);
  for (auto it = out.weight_scales.begin(); it != out.weight_scales.end();)
    it = g.findValue(it->first) ? std::next(it) : out.weight_scales.erase(it);
  return out;
}

TfliteImport importTfliteFile(const std::string& path, const TfliteImportOptions& opts) {
  try {
    return importTfliteBytes(readFile(path), opts, path);
  } catch (const std::bad_alloc&) {
    throw ResourceError(path + ": out of memory while loading the TFLite model");
  }
}

}  // namespace npuc
