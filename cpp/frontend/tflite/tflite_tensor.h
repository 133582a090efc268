// TFLite tensor contents and types as npuc sees them: constant buffers decoded to npuc Tensors
// (FLOAT16 widened to FP32, INT8/UINT8/INT16/INT32 weights with quantization parameters
// dequantized to FP32, per channel along quantized_dimension), and the (scale, zero_point) of
// quantized activations turned into the float range they can represent.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/tflite/tflite_file.h"
#include "ir/tensor.h"

namespace npuc::tflite {

// The shape of tensor `index` as declared in the file (NHWC for 4-D activations).
Shape tensorShape(const TfliteFile& f, int index);

// Whether the tensor carries usable quantization (at least one scale).
bool isQuantized(const fb::Tensor& t);

// The constant of tensor `index` as an npuc Tensor in the file's layout, or nullopt for a tensor
// without data. Float data becomes FP32; quantized integer data becomes FP32 (q - zp) * scale; plain
// INT32/INT64 data (shapes, axes, paddings) becomes INT64. ModelLoadError naming the file and the
// tensor when the buffer's byte size differs from shape x element size, when per-channel
// parameters do not match the quantized dimension, or for a dtype npuc does not read.
std::optional<Tensor> readConstant(const TfliteFile& f, int index);

// The float range a quantized activation can hold: [(qmin - zp) * s, (qmax - zp) * s] for its
// integer type. nullopt for unquantized tensors or per-channel activation parameters.
struct QuantRange {
  float min = 0, max = 0;
  float scale = 0;
  int64_t zero_point = 0;
  std::string dtype;  // "int8", "uint8", "int16"
};
std::optional<QuantRange> activationRange(const TfliteFile& f, int index);

// The per-channel (or per-tensor: one entry) scales of a quantized weight tensor, with the
// dimension they run along (-1 when per tensor).
struct WeightScales {
  std::vector<float> scales;
  int axis = -1;
};
std::optional<WeightScales> weightScales(const TfliteFile& f, int index);

}  // namespace npuc::tflite
