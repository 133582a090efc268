// Reads the shared models' reference files (<model>.ref.npz: 'input:<name>' / 'output:<name>'
// arrays) through tests/models/npz_to_raw.py and the system Python's numpy, so the C++ tests need
// no zip/npy parser of their own. Shared by the frontend and pass tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "onnx_test_util.h"

namespace npuc::testing {

struct ReferenceData {
  std::map<std::string, Tensor> inputs;
  std::vector<std::pair<std::string, Tensor>> outputs;  // in the model's output order
};

inline DType dtypeFromNumpyName(const std::string& name) {
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  if (name == "int64") return DType::Int64;
  if (name == "int32") return DType::Int32;
  return dtypeFromName(name);
}

// Unpacks `npz` into `scratch` (a folder the caller owns) and loads the arrays.
inline ReferenceData loadReferenceNpz(const fs::path& npz, const fs::path& scratch) {
  const std::string cmd = std::string(kSystemPython) + " " +
                          (testsDir() / "models" / "npz_to_raw.py").string() + " " + npz.string() + " " +
                          scratch.string();
  auto [status, out] = runCommand(cmd);
  if (status != 0) throw std::runtime_error("npz_to_raw.py failed on " + npz.string() + ": " + out);
  ReferenceData ref;
  std::ifstream manifest(scratch / "manifest.txt");
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream ls(line);
    std::string kind, name, dtype, file;
    ls >> kind >> name >> dtype >> file;
    Shape shape;
    for (int64_t d; ls >> d;) shape.push_back(d);
    Tensor t(dtypeFromNumpyName(dtype), shape);
    std::ifstream(scratch / file, std::ios::binary).read(static_cast<char*>(t.raw()), t.nbytes());
    if (kind == "input") ref.inputs[name] = t;
    if (kind == "output") ref.outputs.emplace_back(name, t);
  }
  return ref;
}

}  // namespace npuc::testing
