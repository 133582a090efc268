#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace npuc {

int64_t shapeNumel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("shape " + shapeStr(shape) + " has an unknown or negative dimension");
    if (d != 0 && n > INT64_MAX / d) {
      throw ResourceError("shape " + shapeStr(shape) + " has more elements than int64 can count");
    }
    n *= d;
  }
  return n;
}

std::string shapeStr(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) os << ',';
    if (shape[i] < 0)
      os << '?';
    else
      os << shape[i];
  }
  os << ']';
  return os.str();
}

std::vector<int64_t> shapeStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

namespace {
std::shared_ptr<void> allocateAligned(size_t bytes, bool zero_fill) {
  // Round up so aligned_alloc's size-multiple requirement holds; never request 0 bytes.
  size_t padded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (padded == 0) padded = kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, padded);
  if (!p) throw ResourceError("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (zero_fill) std::memset(p, 0, padded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), Fill::Zero) {}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  return Tensor(dtype, std::move(shape), Fill::None);
}

Tensor::Tensor(DType dtype, Shape shape, Fill fill) : dtype_(dtype), shape_(std::move(shape)) {
  if (!isStorable(dtype)) throw Error(std::string("cannot allocate a tensor of dtype ") + dtypeName(dtype));
  numel_ = shapeNumel(shape_);
  const int64_t elem = static_cast<int64_t>(dtypeSize(dtype));
  if (numel_ > kMaxTensorBytes / elem) {
    throw ResourceError("tensor of shape " + shapeStr(shape_) + " and dtype " + dtypeName(dtype) +
                        " exceeds the " + std::to_string(kMaxTensorBytes >> 30) + " GiB tensor limit");
  }
  owner_ = allocateAligned(nbytes(), fill == Fill::Zero);
  data_ = owner_.get();
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shapeNumel(t.shape_);
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  if (dtype_ == DType::Undefined) return Tensor();
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shapeNumel(shape) != numel_) {
    throw ShapeError("cannot reshape " + shapeStr(shape_) + " to " + shapeStr(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

void Tensor::checkType(DType requested) const {
  if (requested != dtype_) {
    throw Error(std::string("tensor holds ") + dtypeName(dtype_) + ", accessed as " + dtypeName(requested));
  }
}

int64_t Tensor::intAt(int64_t i) const {
  switch (dtype_) {
    case DType::Int64: return static_cast<const int64_t*>(data_)[i];
    case DType::Int32: return static_cast<const int32_t*>(data_)[i];
    case DType::Int16: return static_cast<const int16_t*>(data_)[i];
    case DType::Int8: return static_cast<const int8_t*>(data_)[i];
    case DType::UInt8: return static_cast<const uint8_t*>(data_)[i];
    case DType::UInt16: return static_cast<const uint16_t*>(data_)[i];
    case DType::UInt32: return static_cast<const uint32_t*>(data_)[i];
    case DType::UInt64: return static_cast<int64_t>(static_cast<const uint64_t*>(data_)[i]);
    case DType::Bool: return static_cast<const uint8_t*>(data_)[i] != 0;
    case DType::Float32: return static_cast<int64_t>(static_cast<const float*>(data_)[i]);
    case DType::Float64: return static_cast<int64_t>(static_cast<const double*>(data_)[i]);
    case DType::Float16: return static_cast<int64_t>(halfToFloat(static_cast<const uint16_t*>(data_)[i]));
    default: throw Error(std::string("intAt on a tensor of dtype ") + dtypeName(dtype_));
  }
}

double Tensor::doubleAt(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return static_cast<const float*>(data_)[i];
    case DType::Float64: return static_cast<const double*>(data_)[i];
    case DType::Float16: return halfToFloat(static_cast<const uint16_t*>(data_)[i]);
    default: return static_cast<double>(intAt(i));
  }
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = intAt(i);
  return v;
}

namespace {
template <typename Dst>
void castInto(const Tensor& src, Dst* dst) {
  const int64_t n = src.numel();
  switch (src.dtype()) {
    case DType::Float32: {
      const float* s = src.data<float>();
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(s[i]);
      return;
    }
    case DType::Float64: {
      const double* s = src.data<double>();
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(s[i]);
      return;
    }
    case DType::Float16: {
      const uint16_t* s = static_cast<const uint16_t*>(src.raw());
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(halfToFloat(s[i]));
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(src.intAt(i));
      return;
  }
}
}  // namespace

Tensor Tensor::castTo(DType dtype) const {
  if (dtype == dtype_) return clone();
  Tensor out(dtype, shape_);
  switch (dtype) {
    case DType::Float32: castInto(*this, out.data<float>()); break;
    case DType::Float64: castInto(*this, out.data<double>()); break;
    case DType::Int8: castInto(*this, out.data<int8_t>()); break;
    case DType::UInt8: castInto(*this, out.data<uint8_t>()); break;
    case DType::Int16: castInto(*this, out.data<int16_t>()); break;
    case DType::UInt16: castInto(*this, out.data<uint16_t>()); break;
    case DType::Int32: castInto(*this, out.data<int32_t>()); break;
    case DType::UInt32: castInto(*this, out.data<uint32_t>()); break;
    case DType::Int64: castInto(*this, out.data<int64_t>()); break;
    case DType::UInt64: castInto(*this, out.data<uint64_t>()); break;
    case DType::Bool: {
      uint8_t* d = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < numel_; ++i) d[i] = doubleAt(i) != 0.0;
      break;
    }
    case DType::Float16: {
      uint16_t* d = static_cast<uint16_t*>(out.raw());
      for (int64_t i = 0; i < numel_; ++i) d[i] = floatToHalf(static_cast<float>(doubleAt(i)));
      break;
    }
    default: throw Error(std::string("cannot cast to ") + dtypeName(dtype));
  }
  return out;
}

bool Tensor::bitwiseEqual(const Tensor& other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         (nbytes() == 0 || std::memcmp(data_, other.data_, nbytes()) == 0);
}

}  // namespace npuc
