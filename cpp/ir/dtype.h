// Element types of IR tensors and their properties.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc {

// Values match onnx::TensorProto_DataType so conversion at the frontend is a checked cast.
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
};

// Size in bytes of one element; 0 for Undefined and String (not storable in a Tensor).
size_t dtypeSize(DType t);
// Lower-case name as used in messages and dumps ("float32", "int64", ...).
const char* dtypeName(DType t);
// True for the types npuc tensors can hold (everything but Undefined and String).
bool isStorable(DType t);
bool isFloating(DType t);
bool isInteger(DType t);  // signed or unsigned integers, not Bool
// Parses dtypeName() output back; returns Undefined on failure.
DType dtypeFromName(const std::string& name);
// Maps an ONNX TensorProto data type code; returns Undefined for unknown codes.
DType dtypeFromOnnx(int32_t onnx_code);

// IEEE-754 binary16 conversions with round-to-nearest-even, as the NPU's FP16 path does.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

// Maps a C++ element type to its DType at compile time: DTypeOf<float>::value == Float32.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::UInt16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::UInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::UInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};

}  // namespace npuc
