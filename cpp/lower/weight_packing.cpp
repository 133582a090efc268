#include "lower/weight_packing.h"

#include <fmt/format.h>

#include <cstring>

#include "common/error.h"

namespace npuc::lower {

namespace {

void checkDims(const Nchw& dims, int64_t c2) {
  if (c2 < 1) throw ShapeError(fmt::format("NC1HWC2 packing needs a channel block >= 1, got {}", c2));
  for (int64_t d : dims)
    if (d < 0) throw ShapeError(fmt::format("NC1HWC2 packing of a tensor with a negative dim {}", d));
}

}  // namespace

size_t packedBytes(const Nchw& dims, int64_t c2, size_t elem_bytes) {
  checkDims(dims, c2);
  const int64_t c1 = (dims[1] + c2 - 1) / c2;
  return static_cast<size_t>(dims[0] * c1 * dims[2] * dims[3] * c2) * elem_bytes;
}

std::string packNc1hwc2(const void* src, const Nchw& dims, int64_t c2, size_t elem_bytes) {
  std::string out(packedBytes(dims, c2, elem_bytes), '\0');  // padding lanes stay zero
  const char* in = static_cast<const char*>(src);
  forEachPackedElement(dims, c2, [&](int64_t, int64_t, int64_t s, int64_t d) {
    std::memcpy(&out[static_cast<size_t>(d) * elem_bytes], in + static_cast<size_t>(s) * elem_bytes,
                elem_bytes);
  });
  return out;
}

std::string unpackNc1hwc2(const std::string& packed, const Nchw& dims, int64_t c2, size_t elem_bytes) {
  const size_t expected = packedBytes(dims, c2, elem_bytes);
  if (packed.size() != expected) {
    throw BlobError(fmt::format("packed NC1HWC2 weights hold {} bytes, expected {} for [{}] with C2 = {}",
                                packed.size(), expected, fmt::join(dims, ","), c2));
  }
  std::string out(static_cast<size_t>(dims[0] * dims[1] * dims[2] * dims[3]) * elem_bytes, '\0');
  forEachPackedElement(dims, c2, [&](int64_t, int64_t, int64_t s, int64_t d) {
    std::memcpy(&out[static_cast<size_t>(s) * elem_bytes], &packed[static_cast<size_t>(d) * elem_bytes],
                elem_bytes);
  });
  return out;
}

size_t packedElemBytes(ElemType e) {
  switch (e) {
    case ElemType::Int8:
    case ElemType::Int4: return 1;  // int4 is packed as int8 before the nibbles are paired
    case ElemType::Int16:
    case ElemType::Float16: return 2;
    case ElemType::Float32:
    case ElemType::AsGraph: return 0;
  }
  return 0;
}

uint64_t packedWeightBytes(const PackedWeightRef& ref) {
  const size_t elements = packedBytes(ref.dims, ref.c2, 1);
  if (ref.elem == ElemType::Int4) return (elements + 1) / 2 + ref.multipliers;
  return elements * packedElemBytes(ref.elem);
}

std::string packInt4(const int8_t* values, size_t count) {
  std::string out((count + 1) / 2, '\0');
  for (size_t i = 0; i < count; ++i) {
    const int8_t v = values[i];
    if (v < -8 || v > 7)
      throw ShapeError(fmt::format("int4 packing: element {} is {}, outside [-8, 7]", i, v));
    const auto nibble = static_cast<uint8_t>(static_cast<uint8_t>(v) & 0x0F);
    out[i / 2] = static_cast<char>(static_cast<uint8_t>(out[i / 2]) | (i % 2 ? nibble << 4 : nibble));
  }
  return out;
}

std::vector<int8_t> unpackInt4(const std::string& packed, size_t count) {
  if (packed.size() < (count + 1) / 2)
    throw BlobError(fmt::format("int4 weights: {} bytes hold fewer than {} elements", packed.size(), count));
  std::vector<int8_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    const auto byte = static_cast<uint8_t>(packed[i / 2]);
    const int nibble = i % 2 ? byte >> 4 : byte & 0x0F;
    out[i] = static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);  // sign-extend
  }
  return out;
}

std::string transposeElements(const std::string& in, int64_t rows, int64_t cols, size_t elem_bytes) {
  std::string out(in.size(), '\0');
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out[static_cast<size_t>(c * rows + r) * elem_bytes],
                  &in[static_cast<size_t>(r * cols + c) * elem_bytes], elem_bytes);
  return out;
}

}  // namespace npuc::lower
