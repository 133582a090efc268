#include "frontend/tflite/tflite_tensor.h"

#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace npuc::tflite {

namespace {

size_t elementBytes(fb::TensorType t) {
  switch (t) {
    case fb::TensorType_FLOAT32: case fb::TensorType_INT32: case fb::TensorType_UINT32: return 4;
    case fb::TensorType_FLOAT16: case fb::TensorType_INT16: case fb::TensorType_UINT16: return 2;
    case fb::TensorType_INT8: case fb::TensorType_UINT8: case fb::TensorType_BOOL: return 1;
    case fb::TensorType_INT64: case fb::TensorType_FLOAT64: case fb::TensorType_UINT64: return 8;
    default: return 0;
  }
}

template <typename T>
T load(const uint8_t* p, int64_t i) {  // unaligned little-endian load (buffers are byte vectors)
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

// Integer element `i` as int64 for the integer types a quantized weight can have.
int64_t intElement(fb::TensorType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case fb::TensorType_INT8: return load<int8_t>(p, i);
    case fb::TensorType_UINT8: return load<uint8_t>(p, i);
    case fb::TensorType_INT16: return load<int16_t>(p, i);
    case fb::TensorType_INT32: return load<int32_t>(p, i);
    case fb::TensorType_INT64: return load<int64_t>(p, i);
    default: return 0;
  }
}

Tensor dequantize(const TfliteFile& f, int index, const fb::Tensor& t, const Shape& shape, const uint8_t* data) {
  const fb::QuantizationParameters* q = t.quantization();
  const auto* scales = q->scale();
  const auto* zps = q->zero_point();
  const size_t n_scales = scales->size();
  int axis = -1;
  if (n_scales > 1) {
    axis = q->quantized_dimension();
    if (axis < 0 || axis >= static_cast<int>(shape.size()) || shape[static_cast<size_t>(axis)] != static_cast<int64_t>(n_scales)) {
      throw ModelLoadError(f.name() + ": " + f.tensorWhat(index) + ": " + std::to_string(n_scales) +
                           " quantization scales along quantized_dimension " + std::to_string(q->quantized_dimension()) +
                           " of shape " + shapeStr(shape));
    }
  }
  if (zps && zps->size() != 0 && zps->size() != n_scales) {
    throw ModelLoadError(f.name() + ": " + f.tensorWhat(index) + ": " + std::to_string(zps->size()) +
                         " zero points for " + std::to_string(n_scales) + " scales");
  }
  Tensor out(DType::Float32, shape);
  float* o = out.data<float>();
  const int64_t numel = out.numel();
  int64_t inner = 1;  // elements between two steps of the quantized dimension
  for (size_t d = static_cast<size_t>(axis + 1); axis >= 0 && d < shape.size(); ++d) inner *= shape[d];
  for (int64_t i = 0; i < numel; ++i) {
    const size_t c = axis < 0 ? 0 : static_cast<size_t>((i / inner) % static_cast<int64_t>(n_scales));
    const int64_t zp = (zps && zps->size()) ? zps->Get(static_cast<uint32_t>(c)) : 0;
    o[i] = static_cast<float>(static_cast<double>(intElement(t.type(), data, i) - zp) * scales->Get(static_cast<uint32_t>(c)));
  }
  return out;
}

}  // namespace

Shape tensorShape(const TfliteFile& f, int index) {
  const fb::Tensor& t = f.tensor(index, "tensor shape");
  Shape s;
  if (t.shape()) {
    for (int32_t d : *t.shape()) {
      if (d < 0) throw ModelLoadError(f.name() + ": " + f.tensorWhat(index) + ": negative dim " + std::to_string(d) + " in its shape");
      s.push_back(d);
    }
  }
  return s;
}

bool isQuantized(const fb::Tensor& t) {
  return t.quantization() && t.quantization()->scale() && t.quantization()->scale()->size() > 0;
}

std::optional<Tensor> readConstant(const TfliteFile& f, int index) {
  size_t size = 0;
  const uint8_t* data = f.tensorData(index, &size);
  if (!data) return std::nullopt;
  const fb::Tensor& t = f.tensor(index, "constant");
  const Shape shape = tensorShape(f, index);
  const size_t eb = elementBytes(t.type());
  const std::string what = f.name() + ": " + f.tensorWhat(index);
  if (eb == 0) throw ModelLoadError(what + ": constant of type " + fb::EnumNameTensorType(t.type()) + " is not read by npuc");
  const int64_t numel = shapeNumel(shape);
  if (static_cast<uint64_t>(numel) > size / eb || static_cast<uint64_t>(numel) * eb != size) {  // no overflow
    throw ModelLoadError(what + ": buffer holds " + std::to_string(size) + " bytes, its shape " + shapeStr(shape) +
                         " of " + fb::EnumNameTensorType(t.type()) + " needs " +
                         (numel <= INT64_MAX / 8 ? std::to_string(numel * static_cast<int64_t>(eb))
                                                 : std::to_string(numel) + " x " + std::to_string(eb)));
  }
  const bool int_type = t.type() == fb::TensorType_INT8 || t.type() == fb::TensorType_UINT8 ||
                        t.type() == fb::TensorType_INT16 || t.type() == fb::TensorType_INT32 ||
                        t.type() == fb::TensorType_INT64;
  // Integer data with a scale is a quantized weight or bias; without, a shape/axis/padding list.
  if (int_type && isQuantized(t) && t.type() != fb::TensorType_INT64) return dequantize(f, index, t, shape, data);
  switch (t.type()) {
    case fb::TensorType_FLOAT32: {
      Tensor out(DType::Float32, shape);
      std::memcpy(out.raw(), data, size);
      return out;
    }
    case fb::TensorType_FLOAT16: {
      Tensor half(DType::Float16, shape);
      std::memcpy(half.raw(), data, size);
      return half.castTo(DType::Float32);
    }
    case fb::TensorType_INT32: case fb::TensorType_INT64: case fb::TensorType_INT8: case fb::TensorType_UINT8:
    case fb::TensorType_INT16: {
      Tensor out(DType::Int64, shape);
      for (int64_t i = 0; i < numel; ++i) out.data<int64_t>()[i] = intElement(t.type(), data, i);
      return out;
    }
    case fb::TensorType_BOOL: {
      Tensor out(DType::Bool, shape);
      std::memcpy(out.raw(), data, size);
      return out;
    }
    default:
      throw ModelLoadError(what + ": constant of type " + fb::EnumNameTensorType(t.type()) + " is not read by npuc");
  }
}

std::optional<QuantRange> activationRange(const TfliteFile& f, int index) {
  const fb::Tensor& t = f.tensor(index, "quantization");
  if (!isQuantized(t) || t.quantization()->scale()->size() != 1) return std::nullopt;
  QuantRange r;
  int64_t qmin = 0, qmax = 0;
  switch (t.type()) {
    case fb::TensorType_INT8: qmin = -128; qmax = 127; r.dtype = "int8"; break;
    case fb::TensorType_UINT8: qmin = 0; qmax = 255; r.dtype = "uint8"; break;
    case fb::TensorType_INT16: qmin = -32768; qmax = 32767; r.dtype = "int16"; break;
    default: return std::nullopt;
  }
  r.scale = t.quantization()->scale()->Get(0);
  const auto* zps = t.quantization()->zero_point();
  r.zero_point = (zps && zps->size()) ? zps->Get(0) : 0;
  r.min = static_cast<float>(static_cast<double>(qmin - r.zero_point) * r.scale);
  r.max = static_cast<float>(static_cast<double>(qmax - r.zero_point) * r.scale);
  return r;
}

std::optional<WeightScales> weightScales(const TfliteFile& f, int index) {
  const fb::Tensor& t = f.tensor(index, "quantization");
  if (!isQuantized(t)) return std::nullopt;
  WeightScales w;
  for (float s : *t.quantization()->scale()) w.scales.push_back(s);
  w.axis = w.scales.size() > 1 ? t.quantization()->quantized_dimension() : -1;
  return w;
}

}  // namespace npuc::tflite
