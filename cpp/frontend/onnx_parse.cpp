#include "frontend/onnx_parse.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "common/error.h"

namespace npuc {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::ZeroCopyInputStream;

// Protobuf's default total-bytes limit is 64 MiB; ONNX models without external data may use the
// whole 2 GiB a protobuf message can address.
constexpr int kMaxModelBytes = INT_MAX;

// Parse must succeed, consume every byte, and look like an ONNX model (a graph and an IR
// version): random bytes occasionally decode as a protobuf of unknown fields.
onnx::ModelProto parseStream(ZeroCopyInputStream& raw, const std::string& what) {
  onnx::ModelProto model;
  bool ok = false;
  {
    CodedInputStream in(&raw);
    in.SetTotalBytesLimit(kMaxModelBytes);
    ok = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  if (!ok) {
    throw ModelLoadError(what + ": not a valid ONNX model (protobuf parse failed: the file is truncated, " +
                         "corrupt, larger than 2 GiB, or not ONNX)");
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    throw ModelLoadError(what + ": not an ONNX model (no graph or no ir_version in the parsed protobuf)");
  }
  return model;
}

}  // namespace

onnx::ModelProto parseModelFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelLoadError(path + ": cannot open model file (" + std::strerror(errno) + ")");
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  onnx::ModelProto model = parseStream(stream, path);
  if (stream.GetErrno() != 0) {
    throw ModelLoadError(path + ": read error (" + std::strerror(stream.GetErrno()) + ")");
  }
  return model;
}

onnx::ModelProto parseModelBytes(const std::string& bytes, const std::string& what) {
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    throw ModelLoadError(what +
                         ": model is larger than protobuf's 2 GiB limit; store weights as external data");
  }
  return parseStream(stream, what);
}

}  // namespace npuc
