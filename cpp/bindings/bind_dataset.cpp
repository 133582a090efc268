// read_npy / parse_dataset_list: the calibration-list parsing of python/npuc/dataset.py, done in
// C++ (cpp/frontend/dataset_list.h, npy_reader.h) so the untrusted-input path is fuzzed and
// sanitized with the rest of the core. Images are still decoded by Pillow in Python.
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "frontend/dataset_list.h"
#include "frontend/npy_reader.h"

namespace npuc::bindings {

void bindDataset(py::module_& m) {
  m.def(
      "read_npy",
      [](const std::string& path) {
        Tensor t;
        {
          py::gil_scoped_release release;
          t = readNpyFile(path);
        }
        return tensorToNumpy(t);
      },
      py::arg("path"),
      "Reads a .npy file (format 1.0-3.0, numeric or bool dtype, either byte order, C or Fortran order) "
      "into a C-order native-endian array. Raises InputError naming the problem (bad magic or header, "
      "unsupported dtype, truncated or oversized data) before allocating.");
  m.def(
      "parse_dataset_list",
      [](const std::string& path, size_t expected_files) {
        std::vector<DatasetEntry> entries;
        {
          py::gil_scoped_release release;
          entries = readDatasetList(path, expected_files);
        }
        py::list out;
        for (const DatasetEntry& e : entries) out.append(py::make_tuple(e.line, e.text, e.tokens, e.paths));
        return out;
      },
      py::arg("path"), py::arg("expected_files") = 0,
      "Parses a dataset.txt: [(line number, line text, file names as written, paths resolved against the "
      "list's folder)] per sample line. Raises InputError naming the line for a wrong file count "
      "(expected_files > 0), a NUL byte, an unreadable or oversized list, or a list with no sample.");
}

}  // namespace npuc::bindings
