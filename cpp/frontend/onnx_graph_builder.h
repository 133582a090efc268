// ModelProto -> npuc Graph, structurally: values, constants, nodes and attributes, in file
// order. No legacy upgrade, sorting or inference happens here (see onnx_import.cpp for the
// whole load pipeline).
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>

#include "frontend/onnx_tensor.h"
#include "ir/graph.h"

namespace npuc {

// Lowest and highest default-domain opset npuc imports. Older forms are rewritten into the
// canonical ones by frontend/legacy_upgrade.h.
constexpr int64_t kMinImportOpset = 1;
constexpr int64_t kMaxImportOpset = 21;

// Builds the IR for `model`. Initializers and Constant nodes become constant values (each
// initializer's bytes are released from `model` once converted, so weights are not held twice).
// Throws ModelLoadError for an opset outside [kMinImportOpset, kMaxImportOpset], undefined
// (dangling) node inputs, duplicate tensor names, mistyped attributes and bad tensors;
// UnsupportedOpError for ops of unknown domains. Messages name the node and the tensor.
// `custom_ops` (reg_custom_op) becomes the graph's: its ops are accepted in any domain.
std::unique_ptr<Graph> buildGraphFromOnnx(onnx::ModelProto& model, const ExternalDataPolicy& policy,
                                          std::shared_ptr<const CustomOpSet> custom_ops = nullptr);

}  // namespace npuc
