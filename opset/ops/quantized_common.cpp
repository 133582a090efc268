// The integer helpers of quantized_ops.h.
#include "opset/ops/quantized_ops.h"

namespace npuc::qops {

QRange quantRange(DType t, const std::string& what) {
  switch (t) {
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::UInt16: return {0, 65535};
    case DType::Int16: return {-32768, 32767};
    default: throw ShapeError(what + " must be uint8, int8, uint16 or int16, got " + dtypeName(t));
  }
}

int32_t intAt(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::UInt8: return t.as<const uint8_t>()[i];
    case DType::Int8: return t.as<const int8_t>()[i];
    case DType::UInt16: return t.as<const uint16_t>()[i];
    case DType::Int16: return t.as<const int16_t>()[i];
    case DType::Int32: return t.as<const int32_t>()[i];
    default: throw ShapeError(std::string("expected an integer tensor, got ") + dtypeName(t.dtype));
  }
}

void storeInt(const TensorView& t, int64_t i, int32_t v) {
  switch (t.dtype) {
    case DType::UInt8: t.as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::Int8: t.as<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::UInt16: t.as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DType::Int16: t.as<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DType::Int32: t.as<int32_t>()[i] = v; break;
    default: throw ShapeError(std::string("cannot store into a ") + dtypeName(t.dtype) + " tensor");
  }
}

ParamIndex resolveParams(const std::string& op, const Shape& x, int64_t axis, const Shape& scale,
                         const Shape* zero_point) {
  if (zero_point && *zero_point != scale) {
    throw ShapeError(op + " zero point " + shapeStr(*zero_point) + " must have the shape of the scale " +
                     shapeStr(scale));
  }
  ParamIndex p;
  if (shapeNumel(scale) == 1 && scale.size() <= 1) return p;  // per tensor
  const int64_t a = normalizeAxis(axis, static_cast<int64_t>(x.size()), (op + " axis").c_str());
  if (scale.size() != 1 || scale[0] != x[static_cast<size_t>(a)]) {
    throw ShapeError(op + " scale " + shapeStr(scale) + " must be a scalar or 1-D of size " +
                     std::to_string(x[static_cast<size_t>(a)]) + " (axis " + std::to_string(a) +
                     " of input " + shapeStr(x) + ")");
  }
  p.dim = scale[0];
  for (size_t d = static_cast<size_t>(a) + 1; d < x.size(); ++d) p.inner *= x[d];
  return p;
}

void checkChannelParam(const std::string& op, const char* what, const Shape& s, int64_t count) {
  const int64_t n = shapeNumel(s);
  if (s.size() > 1 || (n != 1 && n != count)) {
    throw ShapeError(op + " " + what + " " + shapeStr(s) + " must be a scalar or 1-D of size " +
                     std::to_string(count));
  }
}

}  // namespace npuc::qops
