#include "frontend/caffe/caffe_parse.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace npuc::caffe {

namespace {

// Collects the text parser's first error with its line and column instead of protobuf's default
// of logging to stderr, so the ModelLoadError says where the prototxt is wrong.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!message_.empty()) return;
    message_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

}  // namespace

std::string readWholeFile(const std::string& path, const char* role) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelLoadError(path + ": cannot open " + role + " (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ModelLoadError(path + ": read error while reading the " + role);
  return ss.str();
}

npuc_caffe::NetParameter parsePrototxtText(const std::string& text, const std::string& what) {
  npuc_caffe::NetParameter net;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  // Deploy prototxts carry training-only fields (fillers, lr_mult, data transforms) that npuc's
  // subset does not declare; they do not affect inference.
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  if (!parser.ParseFromString(text, &net)) {
    throw ModelLoadError(what + ": not a valid Caffe prototxt (" +
                         (errors.message().empty() ? std::string("text format parse failed") : errors.message()) +
                         ")");
  }
  if (net.layer_size() == 0 && net.layers_size() > 0) {
    throw ModelLoadError(what + ": uses the legacy V1 'layers' format; upgrade it with Caffe's "
                         "upgrade_net_proto_text tool (npuc reads the 'layer' format)");
  }
  if (net.layer_size() == 0) throw ModelLoadError(what + ": the prototxt declares no layers");
  return net;
}

npuc_caffe::NetParameter parsePrototxtFile(const std::string& path) {
  return parsePrototxtText(readWholeFile(path, "Caffe prototxt"), path);
}

npuc_caffe::NetParameter parseCaffemodelBytes(const std::string& bytes, const std::string& what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    throw ModelLoadError(what + ": caffemodel is larger than protobuf's 2 GiB limit");
  }
  npuc_caffe::NetParameter net;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  if (!net.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    throw ModelLoadError(what + ": not a valid caffemodel (protobuf parse failed: the file is truncated, corrupt "
                         "or not a binary NetParameter; a prototxt given as blobs?)");
  }
  if (net.layer_size() == 0 && net.layers_size() == 0) {
    throw ModelLoadError(what + ": the caffemodel has no layers (not a caffemodel?)");
  }
  return net;
}

npuc_caffe::NetParameter parseCaffemodelFile(const std::string& path) {
  return parseCaffemodelBytes(readWholeFile(path, "caffemodel"), path);
}

}  // namespace npuc::caffe
