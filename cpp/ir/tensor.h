// Dense tensors: an owning Tensor (constants, weights, host buffers) and a non-owning TensorView
// (what kernels read and write). Both are contiguous row-major (C order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/dtype.h"

namespace npuc {

using Shape = std::vector<int64_t>;

// Element count of a fully known shape. Throws ShapeError on a negative dim and ResourceError if
// the count overflows int64 (so a 1<<40-element declaration is refused before anything is
// allocated). An empty shape is a scalar: 1 element.
int64_t shapeNumel(const Shape& shape);
// "[1,3,224,224]"; unknown dims print as '?'.
std::string shapeStr(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> shapeStrides(const Shape& shape);

// Largest tensor npuc will allocate (bytes). Anything larger is a malformed or hostile model.
constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;
// Alignment of every buffer npuc allocates (one cache line; also what the blob promises).
constexpr size_t kTensorAlignment = 64;

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled, 64-byte-aligned tensor. Throws ResourceError beyond kMaxTensorBytes.
  Tensor(DType dtype, Shape shape);
  // Same allocation without the zero fill, for a kernel output the caller writes element by
  // element before anyone reads it (the simulator's step outputs: the fill cost 3-7% there).
  static Tensor uninitialized(DType dtype, Shape shape);
  // Wraps memory owned elsewhere; `owner` keeps it alive (may be null for static memory).
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  // Scalar and 1-D helpers for building constants.
  template <typename T>
  static Tensor scalar(T v) {
    Tensor t(DTypeOf<T>::value, {});
    *t.data<T>() = v;
    return t;
  }
  template <typename T>
  static Tensor fromVector(const std::vector<T>& v, Shape shape = {}) {
    if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
    Tensor t(DTypeOf<T>::value, std::move(shape));
    if (static_cast<size_t>(t.numel()) != v.size()) throw ShapeError("Tensor::fromVector: size mismatch");
    for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
    return t;
  }

  bool defined() const { return data_ != nullptr || (dtype_ != DType::Undefined && numel_ == 0); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtypeSize(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // Typed access; throws Error if T does not match dtype().
  template <typename T>
  T* data() {
    checkType(DTypeOf<T>::value);
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    checkType(DTypeOf<T>::value);
    return static_cast<const T*>(data_);
  }

  // Deep copy with its own storage.
  Tensor clone() const;
  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Any integer or bool element as int64 / any numeric element as double (for attributes,
  // shape tensors and tests; not for hot loops).
  int64_t intAt(int64_t flat_index) const;
  double doubleAt(int64_t flat_index) const;
  std::vector<int64_t> toInt64Vector() const;
  // Converts to another dtype (saturating nothing: C++ conversion semantics; float16 rounds RNE).
  Tensor castTo(DType dtype) const;
  // True if dtype, shape and bytes are identical.
  bool bitwiseEqual(const Tensor& other) const;
  bool operator==(const Tensor& other) const { return bitwiseEqual(other); }

 private:
  enum class Fill { Zero, None };
  Tensor(DType dtype, Shape shape, Fill fill);
  void checkType(DType requested) const;

  DType dtype_ = DType::Undefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// What a kernel sees of one input or output: pointer, dtype and shape. Cheap to copy. The executor
// builds these once per plan and only patches `data` per run. A missing optional input has
// data == nullptr and dtype Undefined.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Undefined;
  Shape shape;

  TensorView() = default;
  TensorView(void* d, DType t, Shape s) : data(d), dtype(t), shape(std::move(s)) {}
  explicit TensorView(Tensor& t) : data(t.raw()), dtype(t.dtype()), shape(t.shape()) {}
  explicit TensorView(const Tensor& t)
      : data(const_cast<void*>(t.raw())), dtype(t.dtype()), shape(t.shape()) {}

  bool present() const { return dtype != DType::Undefined; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return shapeNumel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace npuc
