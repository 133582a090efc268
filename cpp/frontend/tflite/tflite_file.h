// One TFLite flatbuffer in memory: the bytes, checked by the flatbuffers Verifier before anything
// reads them, and the lookups every converter needs with their bounds checks (operator codes,
// tensors, buffers). Every refusal names the file and the record.
#pragma once

#include <cstdint>
#include <string>

#include "tflite_fbs/tflite_subset_generated.h"

namespace npuc::tflite {

namespace fb = ::npuc_tflite;

class TfliteFile {
 public:
  // Takes the bytes and verifies them. ModelLoadError "<name>: ..." for a buffer too short to be
  // a flatbuffer, a foreign identifier (not "TFL3"), a buffer the verifier refuses, or a model
  // without subgraphs.
  TfliteFile(std::string bytes, std::string name);
  TfliteFile(const TfliteFile&) = delete;
  TfliteFile& operator=(const TfliteFile&) = delete;

  const fb::Model& model() const { return *model_; }
  const fb::SubGraph& subgraph() const { return *subgraph_; }  // the main one (index 0)
  const std::string& name() const { return name_; }

  // The builtin code of operator `op_index` of the main subgraph (newer files carry it in
  // builtin_code, older ones only in deprecated_builtin_code) and, for CUSTOM, its custom code.
  fb::BuiltinOperator builtinCode(const fb::Operator& op, int op_index) const;
  std::string customCode(const fb::Operator& op) const;
  // "CONV_2D", "CUSTOM:Convolution2DTransposeBias", "BUILTIN_200" for a code this schema lacks.
  std::string opName(const fb::Operator& op, int op_index) const;

  int numTensors() const;
  // Tensor `index` of the main subgraph; ModelLoadError "<file>: <where>: tensor index N out of
  // range (the subgraph has M tensors)".
  const fb::Tensor& tensor(int index, const std::string& where) const;
  // "tensor 12 'conv1/weights'" for messages.
  std::string tensorWhat(int index) const;
  // The constant data of a tensor: null/0 when it has none (an activation). ModelLoadError for a
  // buffer index out of range or data stored outside the flatbuffer (models over 2 GB).
  const uint8_t* tensorData(int index, size_t* size) const;

 private:
  std::string bytes_;
  std::string name_;
  const fb::Model* model_ = nullptr;
  const fb::SubGraph* subgraph_ = nullptr;
};

// "BUILTIN_7" style name of a builtin code (the schema's enum name when it has one).
std::string builtinName(int32_t code);

}  // namespace npuc::tflite
