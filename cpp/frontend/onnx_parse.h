// Reading serialized ONNX ModelProtos safely: large models (up to protobuf's 2 GiB limit), and a
// truncated or foreign file is a ModelLoadError, never a crash or a silently partial model.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace npuc {

// Parses the file at `path` without holding a second copy of its bytes. Messages name the file.
onnx::ModelProto parseModelFile(const std::string& path);
// Parses serialized bytes; `what` names the source in messages ("<bytes>", a file name).
onnx::ModelProto parseModelBytes(const std::string& bytes, const std::string& what = "<bytes>");

}  // namespace npuc
