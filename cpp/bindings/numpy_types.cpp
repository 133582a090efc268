// numpy <-> npuc element types.
#include <pybind11/stl.h>

#include <cstring>

#include "bindings/bindings.h"

namespace npuc::bindings {

py::dtype toNumpyDType(DType dtype) {
  switch (dtype) {
    case DType::Float32: return py::dtype::of<float>();
    case DType::Float64: return py::dtype::of<double>();
    case DType::Float16: return py::dtype("float16");
    case DType::Int8: return py::dtype::of<int8_t>();
    case DType::UInt8: return py::dtype::of<uint8_t>();
    case DType::Int16: return py::dtype::of<int16_t>();
    case DType::UInt16: return py::dtype::of<uint16_t>();
    case DType::Int32: return py::dtype::of<int32_t>();
    case DType::UInt32: return py::dtype::of<uint32_t>();
    case DType::Int64: return py::dtype::of<int64_t>();
    case DType::UInt64: return py::dtype::of<uint64_t>();
    case DType::Bool: return py::dtype::of<bool>();
    default: throw Error(std::string("no numpy type for npuc type ") + dtypeName(dtype));
  }
}

DType fromNumpyDType(const py::dtype& dtype) {
  // Byte order: '=' native, '|' not applicable, '<'/'>' explicit (native only if it matches).
  const char order = dtype.byteorder();
  constexpr bool little_endian_host = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if ((order == '<' && !little_endian_host) || (order == '>' && little_endian_host)) return DType::Undefined;
  const size_t size = static_cast<size_t>(dtype.itemsize());
  switch (dtype.kind()) {
    case 'f':
      return size == 4   ? DType::Float32
             : size == 8 ? DType::Float64
             : size == 2 ? DType::Float16
                         : DType::Undefined;
    case 'i':
      return size == 1   ? DType::Int8
             : size == 2 ? DType::Int16
             : size == 4 ? DType::Int32
             : size == 8 ? DType::Int64
                         : DType::Undefined;
    case 'u':
      return size == 1   ? DType::UInt8
             : size == 2 ? DType::UInt16
             : size == 4 ? DType::UInt32
             : size == 8 ? DType::UInt64
                         : DType::Undefined;
    case 'b': return size == 1 ? DType::Bool : DType::Undefined;
    default: return DType::Undefined;
  }
}

py::array tensorToNumpy(const Tensor& t) {
  py::array out(toNumpyDType(t.dtype()), t.shape());
  if (t.nbytes()) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

py::list valueInfoList(const std::vector<Value*>& values) {
  py::list out;
  for (const Value* v : values) {
    py::dict d;
    d["name"] = v->name();
    d["dtype"] = dtypeName(v->dtype());
    d["shape"] = py::tuple(py::cast(v->shape()));
    out.append(d);
  }
  return out;
}

}  // namespace npuc::bindings
