#include "frontend/onnx_import.h"

#include <filesystem>

#include "frontend/error_prefix.h"
#include "frontend/import_tail.h"
#include "frontend/legacy_upgrade.h"
#include "frontend/onnx_graph_builder.h"
#include "frontend/onnx_parse.h"

namespace npuc {

namespace {

std::unique_ptr<Graph> importModel(onnx::ModelProto& model, const ImportOptions& opts,
                                   const std::string& base_dir) {
  std::unique_ptr<Graph> g = buildGraphFromOnnx(model, ExternalDataPolicy{base_dir}, opts.custom_ops);
  model.Clear();                                // everything needed now lives in the IR
  upgradeLegacyForms(*g, g->opsetVersion(""));  // ONNX's own canonicalization: older opset forms
  finishImport(*g, opts);                       // the tail every frontend shares (frontend/import_tail.h)
  return g;
}

}  // namespace

std::unique_ptr<Graph> importOnnxFile(const std::string& path, const ImportOptions& opts) {
  try {
    onnx::ModelProto model = parseModelFile(path);  // names the file itself
    try {
      const std::string dir = std::filesystem::absolute(path).parent_path().string();
      return importModel(model, opts, dir);
    } catch (const Error&) {
      rethrowWithPrefix(path + ": ");
    }
  } catch (const std::bad_alloc&) {
    throw ResourceError(path + ": out of memory while loading the model");
  }
}

std::unique_ptr<Graph> importOnnxBytes(const std::string& bytes, const ImportOptions& opts,
                                       const std::string& base_dir) {
  onnx::ModelProto model = parseModelBytes(bytes);
  return importModel(model, opts, base_dir);
}

}  // namespace npuc
