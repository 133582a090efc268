#include "ir/dtype.h"

#include <cstring>

namespace npuc {

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
      return 4;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
      return 8;
    case DType::Float16:
    case DType::Int16:
    case DType::UInt16:
      return 2;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return 1;
    case DType::Undefined:
    case DType::String:
      return 0;
  }
  return 0;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::Undefined: return "undefined";
    case DType::Float32: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
  }
  return "undefined";
}

bool isStorable(DType t) { return dtypeSize(t) != 0; }

bool isFloating(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::Float64;
}

bool isInteger(DType t) {
  switch (t) {
    case DType::Int8:
    case DType::UInt8:
    case DType::Int16:
    case DType::UInt16:
    case DType::Int32:
    case DType::UInt32:
    case DType::Int64:
    case DType::UInt64:
      return true;
    default:
      return false;
  }
}

DType dtypeFromName(const std::string& name) {
  for (int32_t code = 0; code <= 13; ++code) {
    auto t = static_cast<DType>(code);
    if (name == dtypeName(t)) return t;
  }
  return DType::Undefined;
}

DType dtypeFromOnnx(int32_t onnx_code) {
  if (onnx_code < 0 || onnx_code > 13) return DType::Undefined;
  return static_cast<DType>(onnx_code);
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN; keep NaN quiet and non-zero.
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) {  // Rounds to a magnitude above 65504: overflow to Inf.
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // Below the smallest normal half (2^-14): subnormal or zero.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // Below half of 2^-24.
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24 for this range
    const uint32_t half_mant = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t out = half_mant;
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++out;
    return static_cast<uint16_t>(sign | out);
  }
  // Normal range: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  uint32_t out = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) ++out;
  return static_cast<uint16_t>(sign | out);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // Subnormal half: normalize into a float.
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | ((112u - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace npuc
