#include "memory/npu_buffer_sizes.h"

#include "common/error.h"

namespace npuc::memory {

const char* bufferFormatName(BufferFormat f) {
  return f == BufferFormat::Npu ? "npu" : "host";
}

namespace {

DType fromQuantDType(quant::QuantDType t) {
  switch (t) {
    case quant::QuantDType::Int8: return DType::Int8;
    case quant::QuantDType::Int32: return DType::Int32;
    case quant::QuantDType::Float16: return DType::Float16;
    case quant::QuantDType::Int16: return DType::Int16;
    // Int4 weights are held one per int8 until packed two per byte (memory_report's weight rows
    // count the packed half bytes).
    case quant::QuantDType::Int4: return DType::Int8;
    case quant::QuantDType::Int64: return DType::Int64;
  }
  return DType::Int8;
}

int64_t roundUpTo(int64_t x, int64_t multiple) {
  return multiple <= 1 ? x : (x + multiple - 1) / multiple * multiple;
}

}  // namespace

DType npuStorageDType(const Value& v, const quant::QuantPlan* plan) {
  if (plan) {
    auto it = plan->tensors.find(v.name());
    if (it != plan->tensors.end()) return fromQuantDType(it->second.dtype);
  }
  // A float the plan does not cover (none in a complete INT8 plan) or a float build: FP16.
  return v.dtype() == DType::Float32 ? DType::Float16 : v.dtype();
}

std::optional<NpuDType> alignmentDType(DType storage) {
  switch (storage) {
    case DType::Int8:
    case DType::UInt8: return NpuDType::Int8;
    case DType::Int16: return NpuDType::Int16;
    case DType::Float16: return NpuDType::Float16;
    default: return std::nullopt;  // int32 biases, int64 indices, ...: kept plain
  }
}

int64_t npuStoredElements(const Shape& shape, DType dtype, const SocProfile& soc) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const std::optional<NpuDType> t = alignmentDType(dtype);
  if (shape.size() < 2 || shape[1] == 0 || !t || !soc.supportsDtype(*t)) return n;
  return n / shape[1] * roundUpTo(shape[1], soc.alignment(*t, AlignmentRole::Other));
}

uint64_t activationBytes(const Value& v, BufferFormat format, const quant::QuantPlan* plan,
                         const SocProfile& soc) {
  if (!v.hasShape() || !v.shapeIsStatic()) {
    throw ShapeError("memory plan: value '" + v.name() +
                     "' has no static shape (fix dynamic dims with input_size_list)");
  }
  if (format == BufferFormat::Host) {
    int64_t n = 1;
    for (int64_t d : v.shape()) n *= d;
    return static_cast<uint64_t>(n) * dtypeSize(v.dtype());
  }
  const DType storage = npuStorageDType(v, plan);
  return static_cast<uint64_t>(npuStoredElements(v.shape(), storage, soc)) * dtypeSize(storage);
}

}  // namespace npuc::memory
