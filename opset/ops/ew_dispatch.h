// Compile-time dtype dispatch for the elementwise / reduction kernels: turns a runtime DType into
// a call of a generic lambda with a value of the matching C++ element type (a "type tag"), so one
// templated loop serves every dtype an op supports.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "ir/dtype.h"

namespace npuc {
namespace ew {

// IEEE binary16 storage. Kept distinct from uint16_t so dispatch can tell Float16 from UInt16;
// arithmetic goes through halfToFloat / floatToHalf.
struct Half {
  uint16_t bits;
};

// Type tag passed to dispatch lambdas: `using T = typename decltype(tag)::type;`.
template <typename T>
struct Tag {
  using type = T;
};

[[noreturn]] inline void throwUnsupportedDType(const char* op, DType t) {
  throw UnsupportedOpError(std::string(op) + ": element type " + dtypeName(t) + " is not supported");
}

// float32, int32, int64: the types of shape arithmetic.
template <typename Fn>
decltype(auto) dispatchNumeric(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(Tag<float>{});
    case DType::Int32: return fn(Tag<int32_t>{});
    case DType::Int64: return fn(Tag<int64_t>{});
    default: throwUnsupportedDType(op, t);
  }
}

// Every real numeric type: float32/float64 and the signed and unsigned integers (not float16,
// which has no native arithmetic here, and not bool).
template <typename Fn>
decltype(auto) dispatchAllNumeric(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(Tag<float>{});
    case DType::Float64: return fn(Tag<double>{});
    case DType::Int8: return fn(Tag<int8_t>{});
    case DType::UInt8: return fn(Tag<uint8_t>{});
    case DType::Int16: return fn(Tag<int16_t>{});
    case DType::UInt16: return fn(Tag<uint16_t>{});
    case DType::Int32: return fn(Tag<int32_t>{});
    case DType::UInt32: return fn(Tag<uint32_t>{});
    case DType::Int64: return fn(Tag<int64_t>{});
    case DType::UInt64: return fn(Tag<uint64_t>{});
    default: throwUnsupportedDType(op, t);
  }
}

// Unsigned integers (BitShift).
template <typename Fn>
decltype(auto) dispatchUnsigned(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::UInt8: return fn(Tag<uint8_t>{});
    case DType::UInt16: return fn(Tag<uint16_t>{});
    case DType::UInt32: return fn(Tag<uint32_t>{});
    case DType::UInt64: return fn(Tag<uint64_t>{});
    default: throwUnsupportedDType(op, t);
  }
}

// The dtype lists matching the dispatchers, for OpSchema::dtypes.
inline std::vector<DType> numericDTypes() {
  return {DType::Float32, DType::Int32, DType::Int64};
}
inline std::vector<DType> allNumericDTypes() {
  return {DType::Float32, DType::Float64, DType::Int8,   DType::UInt8, DType::Int16,
          DType::UInt16,  DType::Int32,   DType::UInt32, DType::Int64, DType::UInt64};
}

// True if v < 0; always false (without a tautological-compare warning) for unsigned types.
template <typename T>
constexpr bool isNegative(T v) {
  if constexpr (std::is_signed_v<T>) {
    return v < T(0);
  } else {
    return false;
  }
}

// float32, int32, int64 and bool: the types comparisons and logical ops see.
template <typename Fn>
decltype(auto) dispatchNumericOrBool(DType t, const char* op, Fn&& fn) {
  if (t == DType::Bool) return fn(Tag<bool>{});
  return dispatchNumeric(t, op, std::forward<Fn>(fn));
}

// Every real numeric type and bool.
template <typename Fn>
decltype(auto) dispatchAllNumericOrBool(DType t, const char* op, Fn&& fn) {
  if (t == DType::Bool) return fn(Tag<bool>{});
  return dispatchAllNumeric(t, op, std::forward<Fn>(fn));
}

// Every storable dtype; Float16 is passed as Half.
template <typename Fn>
decltype(auto) dispatchStorable(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(Tag<float>{});
    case DType::Float64: return fn(Tag<double>{});
    case DType::Float16: return fn(Tag<Half>{});
    case DType::Int8: return fn(Tag<int8_t>{});
    case DType::UInt8: return fn(Tag<uint8_t>{});
    case DType::Int16: return fn(Tag<int16_t>{});
    case DType::UInt16: return fn(Tag<uint16_t>{});
    case DType::Int32: return fn(Tag<int32_t>{});
    case DType::UInt32: return fn(Tag<uint32_t>{});
    case DType::Int64: return fn(Tag<int64_t>{});
    case DType::UInt64: return fn(Tag<uint64_t>{});
    case DType::Bool: return fn(Tag<bool>{});
    default: throwUnsupportedDType(op, t);
  }
}

}  // namespace ew
}  // namespace npuc
