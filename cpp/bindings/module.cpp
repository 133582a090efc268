// The _npuc extension module: binds the C++ core for python/npuc. Each C++ error type becomes the
// Python exception class of the same name, all deriving from NpucError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "blob/blob_format.h"
#include "common/error.h"
#include "frontend/onnx_graph_builder.h"
#include "ir/tensor.h"
#include "opset/registry.h"

namespace py = pybind11;

PYBIND11_MODULE(_npuc, m) {
  m.doc() = "npuc C++ core";
  m.attr("__version__") = NPUC_VERSION;
  // The core's limits, so Python checks user-given shapes against the same numbers (npuc.shapes).
  m.attr("MAX_TENSOR_BYTES") = npuc::kMaxTensorBytes;
  m.attr("MAX_RANK") = npuc::blob::kMaxRank;
  m.attr("MIN_IMPORT_OPSET") = npuc::kMinImportOpset;
  m.attr("MAX_IMPORT_OPSET") = npuc::kMaxImportOpset;

  static py::exception<npuc::Error> base(m, "NpucError");
  static py::exception<npuc::ModelLoadError> load_err(m, "ModelLoadError", base.ptr());
  static py::exception<npuc::UnsupportedOpError> op_err(m, "UnsupportedOpError", base.ptr());
  static py::exception<npuc::ShapeError> shape_err(m, "ShapeError", base.ptr());
  static py::exception<npuc::GraphError> graph_err(m, "GraphError", base.ptr());
  static py::exception<npuc::InputError> input_err(m, "InputError", base.ptr());
  static py::exception<npuc::ConfigError> config_err(m, "ConfigError", base.ptr());
  static py::exception<npuc::BlobError> blob_err(m, "BlobError", base.ptr());
  static py::exception<npuc::ResourceError> res_err(m, "ResourceError", base.ptr());
  // Most-derived first: pybind11 tries translators in reverse registration order, so one
  // translator that dispatches explicitly keeps the mapping obvious.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const npuc::ModelLoadError& e) {
      load_err(e.what());
    } catch (const npuc::UnsupportedOpError& e) {
      op_err(e.what());
    } catch (const npuc::ShapeError& e) {
      shape_err(e.what());
    } catch (const npuc::GraphError& e) {
      graph_err(e.what());
    } catch (const npuc::InputError& e) {
      input_err(e.what());
    } catch (const npuc::ConfigError& e) {
      config_err(e.what());
    } catch (const npuc::BlobError& e) {
      blob_err(e.what());
    } catch (const npuc::ResourceError& e) {
      res_err(e.what());
    } catch (const npuc::Error& e) {
      base(e.what());
    }
  });

  npuc::bindings::bindCustomOps(m);  // before Model and load_compiled, whose arguments take a set
  npuc::bindings::bindModel(m);
  npuc::bindings::bindRuntime(m);
  npuc::bindings::bindQuant(m);
  npuc::bindings::bindQdq(m);
  npuc::bindings::bindPerf(m);
  npuc::bindings::bindPasses(m);
  npuc::bindings::bindTarget(m);
  npuc::bindings::bindDataset(m);
  npuc::bindings::bindMemory(m);
  npuc::bindings::bindCompile(m);
#ifndef NPUC_CMAKE_PACKAGE_DIR
#define NPUC_CMAKE_PACKAGE_DIR ""
#endif
  m.attr("cmake_package_dir") = std::string(NPUC_CMAKE_PACKAGE_DIR);  // "" outside a CMake build tree
  m.def(
      "supported_ops", [] { return npuc::OpRegistry::instance().opTypes(); },
      "Sorted list of the ops npuc can run: ONNX op types, and 'domain.Op' for other domains.");
}
