#include "frontend/onnx_tensor.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace npuc {

namespace fs = std::filesystem;

// npuc only targets little-endian hosts, which is also ONNX's raw_data byte order, so raw bytes
// are copied as they are.

namespace {

std::string tensorTag(const onnx::TensorProto& p) {
  return "tensor '" + p.name() + "'";
}

// Validates the declared type and dims and returns them, without allocating anything.
std::pair<DType, Shape> declaredType(const onnx::TensorProto& p) {
  const DType dtype = dtypeFromOnnx(p.data_type());
  if (!isStorable(dtype)) {
    throw ModelLoadError(tensorTag(p) + " has unsupported data type " + std::to_string(p.data_type()));
  }
  Shape shape(p.dims().begin(), p.dims().end());
  try {
    const int64_t numel = shapeNumel(shape);
    if (numel > kMaxTensorBytes / static_cast<int64_t>(dtypeSize(dtype))) {
      throw ResourceError("exceeds the " + std::to_string(kMaxTensorBytes >> 30) + " GiB tensor limit");
    }
  } catch (const Error& e) {
    throw ModelLoadError(tensorTag(p) + " declares shape " + shapeStr(shape) +
                         " that is invalid: " + e.what());
  }
  return {dtype, shape};
}

std::string externalField(const onnx::TensorProto& p, const std::string& key) {
  for (const auto& kv : p.external_data()) {
    if (kv.key() == key) return kv.value();
  }
  return "";
}

int64_t parseNonNegative(const onnx::TensorProto& p, const std::string& key) {
  const std::string s = externalField(p, key);
  if (s.empty()) return -1;
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 0) {
    throw ModelLoadError(tensorTag(p) + " has an invalid external data " + key + " '" + s + "'");
  }
  return v;
}

// Resolves `location` inside `base_dir`, refusing absolute paths and anything (.., symlinks)
// that ends up outside the model's folder.
fs::path resolveExternalPath(const onnx::TensorProto& p, const std::string& base_dir) {
  const std::string location = externalField(p, "location");
  if (location.empty()) throw ModelLoadError(tensorTag(p) + " has external data without a location");
  if (base_dir.empty()) {
    throw ModelLoadError(tensorTag(p) + " uses external data ('" + location +
                         "') but the model was not loaded from a file");
  }
  const fs::path rel(location);
  if (rel.is_absolute()) {
    throw ModelLoadError(tensorTag(p) + " external data location '" + location + "' must be a relative path");
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(base_dir), ec);
  const fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec)
    throw ModelLoadError(tensorTag(p) + " external data location '" + location + "' cannot be resolved");
  auto b = base.begin();
  auto f = full.begin();
  for (; b != base.end() && !b->empty(); ++b, ++f) {
    if (f == full.end() || *f != *b) {
      throw ModelLoadError(tensorTag(p) + " external data location '" + location +
                           "' escapes the model's folder " + base.string());
    }
  }
  return full;
}

Tensor readExternal(const onnx::TensorProto& p, DType dtype, const Shape& shape,
                    const ExternalDataPolicy& policy) {
  const fs::path path = resolveExternalPath(p, policy.base_dir);
  const int64_t offset = std::max<int64_t>(parseNonNegative(p, "offset"), 0);
  const int64_t length = parseNonNegative(p, "length");
  const int64_t nbytes = shapeNumel(shape) * static_cast<int64_t>(dtypeSize(dtype));
  if (length >= 0 && length != nbytes) {
    throw ModelLoadError(tensorTag(p) + " external data length " + std::to_string(length) +
                         " does not match " + std::to_string(nbytes) + " bytes of " + dtypeName(dtype) +
                         shapeStr(shape));
  }
  std::error_code ec;
  const auto file_size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw ModelLoadError(tensorTag(p) + " external data file '" + path.string() + "' cannot be read");
  if (offset > file_size || nbytes > file_size - offset) {
    throw ModelLoadError(tensorTag(p) + " external data reads bytes " + std::to_string(offset) + ".." +
                         std::to_string(offset + nbytes) + " past the end of '" + path.string() + "' (" +
                         std::to_string(file_size) + " bytes)");
  }
  Tensor t(dtype, shape);
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(nbytes));
  if (!in)
    throw ModelLoadError(tensorTag(p) + " external data file '" + path.string() + "' could not be read");
  return t;
}

template <typename Field>
void checkCount(const onnx::TensorProto& p, const Field& field, int64_t numel, const char* field_name) {
  if (static_cast<int64_t>(field.size()) != numel) {
    throw ModelLoadError(tensorTag(p) + " holds " + std::to_string(field.size()) + " values in " +
                         field_name + " but its shape " + shapeStr(Shape(p.dims().begin(), p.dims().end())) +
                         " needs " + std::to_string(numel));
  }
}

// Copies a repeated field element-wise into a tensor of element type Dst.
template <typename Dst, typename Field>
Tensor fromField(const onnx::TensorProto& p, DType dtype, const Shape& shape, const Field& field,
                 const char* field_name) {
  checkCount(p, field, shapeNumel(shape), field_name);
  Tensor t(dtype, shape);
  Dst* out = static_cast<Dst*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
  return t;
}

Tensor fromTypedFields(const onnx::TensorProto& p, DType dtype, const Shape& shape) {
  switch (dtype) {
    case DType::Float32: return fromField<float>(p, dtype, shape, p.float_data(), "float_data");
    case DType::Float64: return fromField<double>(p, dtype, shape, p.double_data(), "double_data");
    case DType::Int64: return fromField<int64_t>(p, dtype, shape, p.int64_data(), "int64_data");
    case DType::UInt32: return fromField<uint32_t>(p, dtype, shape, p.uint64_data(), "uint64_data");
    case DType::UInt64: return fromField<uint64_t>(p, dtype, shape, p.uint64_data(), "uint64_data");
    case DType::Int32: return fromField<int32_t>(p, dtype, shape, p.int32_data(), "int32_data");
    case DType::Int16: return fromField<int16_t>(p, dtype, shape, p.int32_data(), "int32_data");
    case DType::Int8: return fromField<int8_t>(p, dtype, shape, p.int32_data(), "int32_data");
    case DType::UInt16: return fromField<uint16_t>(p, dtype, shape, p.int32_data(), "int32_data");
    case DType::UInt8: return fromField<uint8_t>(p, dtype, shape, p.int32_data(), "int32_data");
    // float16 travels as its bit pattern in the low 16 bits of each int32_data entry.
    case DType::Float16: return fromField<uint16_t>(p, dtype, shape, p.int32_data(), "int32_data");
    case DType::Bool: {
      checkCount(p, p.int32_data(), shapeNumel(shape), "int32_data");
      Tensor t(dtype, shape);
      bool* out = t.data<bool>();
      for (int i = 0; i < p.int32_data_size(); ++i) out[i] = p.int32_data(i) != 0;
      return t;
    }
    default: break;
  }
  throw ModelLoadError(tensorTag(p) + " has data type " + dtypeName(dtype) + " that npuc cannot read");
}

}  // namespace

Tensor tensorFromProto(const onnx::TensorProto& p, const ExternalDataPolicy& policy) {
  const auto [dtype, shape] = declaredType(p);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) return readExternal(p, dtype, shape, policy);
  if (p.has_raw_data()) {
    const auto nbytes = static_cast<size_t>(shapeNumel(shape)) * dtypeSize(dtype);
    if (p.raw_data().size() != nbytes) {
      throw ModelLoadError(tensorTag(p) + " has " + std::to_string(p.raw_data().size()) +
                           " bytes of raw_data but " + dtypeName(dtype) + shapeStr(shape) + " needs " +
                           std::to_string(nbytes));
    }
    Tensor t(dtype, shape);
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    return t;
  }
  return fromTypedFields(p, dtype, shape);
}

void tensorToProto(const Tensor& t, onnx::TensorProto* proto) {
  proto->clear_dims();
  for (int64_t d : t.shape()) proto->add_dims(d);
  proto->set_data_type(static_cast<int32_t>(t.dtype()));
  if (t.nbytes() == 0) {
    proto->set_raw_data(std::string());
  } else {
    proto->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

}  // namespace npuc
