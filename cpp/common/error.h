// Typed exceptions thrown by the npuc core. The Python bindings translate each into the
// npuc.NpucError subclass of the same name, so a caller can catch precisely what went wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace npuc {

// Base of every error npuc raises on purpose. Anything else escaping the core is a bug.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The model file could not be read or parsed (missing file, not ONNX, truncated protobuf,
// initializer whose data does not match its declared size, unknown opset, ...).
class ModelLoadError : public Error {
 public:
  using Error::Error;
};

// An op (or op variant / dtype) npuc has no implementation for. Reported at load time.
class UnsupportedOpError : public Error {
 public:
  using Error::Error;
};

// Shape inference failed: inconsistent shapes, unknown dims left after input_size_list, ...
class ShapeError : public Error {
 public:
  using Error::Error;
};

// The graph is structurally broken (cycle, dangling input, duplicate names, use-list corruption).
class GraphError : public Error {
 public:
  using Error::Error;
};

// A runtime input given by the user has the wrong count, shape or dtype.
class InputError : public Error {
 public:
  using Error::Error;
};

// A configuration value (Toolkit.config, CLI flag, SoC profile field) is invalid.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A compiled .npub blob is corrupt, truncated, from another version or for another SoC.
class BlobError : public Error {
 public:
  using Error::Error;
};

// A size or resource limit would be exceeded (tensor too large, folding cap, ...).
class ResourceError : public Error {
 public:
  using Error::Error;
};

}  // namespace npuc
