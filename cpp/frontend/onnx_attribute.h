// onnx::AttributeProto <-> npuc AttrValue, and the attribute kinds ONNX ops expect.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "frontend/onnx_tensor.h"
#include "ir/attribute.h"

namespace npuc {

// Converts one attribute. Attributes written without a `type` (very old exporters) are typed by
// the field they fill. Throws ModelLoadError for kinds the IR does not hold (graphs, sparse
// tensors, type protos); `where` ("node 'conv1' (Conv)") prefixes the message.
AttrValue attrFromProto(const onnx::AttributeProto& a, const ExternalDataPolicy& policy,
                        const std::string& where);

// Writes `value` as attribute `name`.
void attrToProto(const std::string& name, const AttrValue& value, onnx::AttributeProto* a);

// The kind ONNX defines for attribute `attr` of `op_type` when npuc knows it, else nullopt.
// Used to refuse mistyped attributes at load (perm=3 instead of perm=[...]) with a clear error
// instead of a confusing one deep inside shape inference.
std::optional<AttrKind> expectedAttrKind(const std::string& op_type, const std::string& attr);

}  // namespace npuc
