// onnx::TensorProto <-> npuc Tensor, including ONNX external data.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/tensor.h"

namespace npuc {

// Where external tensor data may be read from: files inside `base_dir` only. An empty base_dir
// refuses every external tensor (the model came from bytes, not from a file).
struct ExternalDataPolicy {
  std::string base_dir;
};

// Converts one TensorProto (raw_data, typed *_data fields or EXTERNAL data) into an owned
// Tensor. The declared dims are validated against the available data before anything is
// allocated. Throws ModelLoadError naming the tensor on any mismatch.
Tensor tensorFromProto(const onnx::TensorProto& proto, const ExternalDataPolicy& policy);

// Writes `t` into `proto` (dims, data_type, raw_data in little-endian), keeping proto's name.
void tensorToProto(const Tensor& t, onnx::TensorProto* proto);

}  // namespace npuc
