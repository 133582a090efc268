#include "frontend/tflite/tflite_file.h"

#include <cstring>

#include "common/error.h"

namespace npuc::tflite {

namespace {

// Flatbuffers offsets are 32-bit: a buffer of 2 GiB or more cannot be addressed, and the
// verifier itself refuses sizes beyond FLATBUFFERS_MAX_BUFFER_SIZE.
constexpr size_t kMinFlatbufferBytes = 8;  // root offset + file identifier

}  // namespace

std::string builtinName(int32_t code) {
  if (code >= fb::BuiltinOperator_MIN && code <= fb::BuiltinOperator_MAX) {
    const char* n = fb::EnumNameBuiltinOperator(static_cast<fb::BuiltinOperator>(code));
    if (n && *n) return n;
  }
  return "BUILTIN_" + std::to_string(code);
}

TfliteFile::TfliteFile(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {
  if (bytes_.size() < kMinFlatbufferBytes) {
    throw ModelLoadError(name_ + ": not a TFLite model: " + std::to_string(bytes_.size()) +
                         " bytes, too short for a flatbuffer (truncated file?)");
  }
  if (std::memcmp(bytes_.data() + 4, fb::ModelIdentifier(), 4) != 0) {
    std::string id;
    for (size_t i = 4; i < 8; ++i) {
      const unsigned char c = static_cast<unsigned char>(bytes_[i]);
      id += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
    }
    throw ModelLoadError(name_ + ": not a TFLite model: file identifier '" + id + "', expected 'TFL3'");
  }
  // Nothing is read before the verifier has checked every offset, vector length and string.
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size());
  if (!fb::VerifyModelBuffer(verifier)) {
    throw ModelLoadError(name_ + ": malformed TFLite flatbuffer: the flatbuffers verifier refuses it (truncated "
                         "or corrupted file)");
  }
  model_ = fb::GetModel(bytes_.data());
  if (!model_->subgraphs() || model_->subgraphs()->size() == 0) {
    throw ModelLoadError(name_ + ": the TFLite model has no subgraph");
  }
  subgraph_ = model_->subgraphs()->Get(0);
}

fb::BuiltinOperator TfliteFile::builtinCode(const fb::Operator& op, int op_index) const {
  const auto* codes = model_->operator_codes();
  const uint32_t i = op.opcode_index();
  if (!codes || i >= codes->size()) {
    throw ModelLoadError(name_ + ": subgraph 0 operator " + std::to_string(op_index) + ": opcode_index " +
                         std::to_string(i) + " out of range (the model has " +
                         std::to_string(codes ? codes->size() : 0) + " operator codes)");
  }
  const fb::OperatorCode* c = codes->Get(i);
  // Files written before the int32 field existed only fill the byte; newer ones fill both, with
  // the byte saturated at 127 (PLACEHOLDER_FOR_GREATER_OP_CODES) for codes above it.
  const int32_t wide = static_cast<int32_t>(c->builtin_code());
  const int32_t narrow = c->deprecated_builtin_code();
  return static_cast<fb::BuiltinOperator>(wide > narrow ? wide : narrow);
}

std::string TfliteFile::customCode(const fb::Operator& op) const {
  const fb::OperatorCode* c = model_->operator_codes()->Get(op.opcode_index());
  return c->custom_code() ? c->custom_code()->str() : std::string();
}

std::string TfliteFile::opName(const fb::Operator& op, int op_index) const {
  const fb::BuiltinOperator code = builtinCode(op, op_index);
  if (code == fb::BuiltinOperator_CUSTOM) return "CUSTOM:" + customCode(op);
  return builtinName(code);
}

int TfliteFile::numTensors() const {
  return subgraph_->tensors() ? static_cast<int>(subgraph_->tensors()->size()) : 0;
}

const fb::Tensor& TfliteFile::tensor(int index, const std::string& where) const {
  if (index < 0 || index >= numTensors()) {
    throw ModelLoadError(name_ + ": " + where + ": tensor index " + std::to_string(index) +
                         " out of range (the subgraph has " + std::to_string(numTensors()) + " tensors)");
  }
  return *subgraph_->tensors()->Get(static_cast<uint32_t>(index));
}

std::string TfliteFile::tensorWhat(int index) const {
  std::string s = "tensor " + std::to_string(index);
  if (index >= 0 && index < numTensors()) {
    const fb::Tensor* t = subgraph_->tensors()->Get(static_cast<uint32_t>(index));
    if (t->name()) s += " '" + t->name()->str() + "'";
  }
  return s;
}

const uint8_t* TfliteFile::tensorData(int index, size_t* size) const {
  *size = 0;
  const fb::Tensor& t = tensor(index, "tensor data");
  const uint32_t b = t.buffer();
  const auto* buffers = model_->buffers();
  if (b == 0) return nullptr;  // buffer 0 is the empty sentinel every activation points at
  if (!buffers || b >= buffers->size()) {
    throw ModelLoadError(name_ + ": " + tensorWhat(index) + ": buffer index " + std::to_string(b) +
                         " out of range (the model has " + std::to_string(buffers ? buffers->size() : 0) + " buffers)");
  }
  const fb::Buffer* buf = buffers->Get(b);
  if (buf->offset() > 1) {
    throw ModelLoadError(name_ + ": " + tensorWhat(index) + ": buffer " + std::to_string(b) +
                         " lies outside the flatbuffer (a model over 2 GB); npuc reads only self-contained files");
  }
  if (!buf->data() || buf->data()->size() == 0) return nullptr;
  *size = buf->data()->size();
  return buf->data()->data();
}

}  // namespace npuc::tflite
