// Ops whose output is computed from shapes or attributes rather than moved from an input:
// Shape, Size, ConstantOfShape, Range and Constant. The first two are what shape sub-graphs of
// PyTorch exports start from, so their int64 results must be exact.
#include <algorithm>
#include <cmath>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

// ---------------------------------------------------------------- Shape / Size

// The [start, end) range of dims Shape reports (opset 15 attributes; negative counts from the
// end, both clamped to [0, rank]).
std::pair<int64_t, int64_t> shapeRange(const Attributes& attrs, int64_t rank) {
  auto clampDim = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clampDim(attrs.i("start", 0));
  const int64_t end = clampDim(attrs.i("end", rank));
  return {start, std::max(start, end)};
}

void inferShape(InferContext& ctx) {
  const auto [start, end] = shapeRange(ctx.attrs(), static_cast<int64_t>(ctx.inputShape(0).size()));
  ctx.setOutput(0, DType::Int64, {end - start});
}

class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types[0].shape;
    const auto [start, end] = shapeRange(ctx.node.attrs(), static_cast<int64_t>(in.size()));
    dims_.assign(in.begin() + start, in.begin() + end);
  }
  void run(const KernelIO& io) const override {
    std::copy(dims_.begin(), dims_.end(), io.outputs[0].as<int64_t>());
  }

 private:
  std::vector<int64_t> dims_;
};

void inferSize(InferContext& ctx) {
  shapeNumel(ctx.inputShape(0));  // validates the shape is static
  ctx.setOutput(0, DType::Int64, {});
}

class SizeKernel : public Kernel {
 public:
  explicit SizeKernel(const KernelContext& ctx) : numel_(shapeNumel(ctx.input_types[0].shape)) {}
  void run(const KernelIO& io) const override { *io.outputs[0].as<int64_t>() = numel_; }

 private:
  int64_t numel_;
};

// ---------------------------------------------------------------- ConstantOfShape

// The fill value: the one-element `value` tensor attribute, default float32 0.
Tensor fillValue(const Node& node) {
  if (!node.attrs().has("value")) return Tensor::scalar<float>(0.0f);
  const Tensor& v = node.attrs().t("value");
  if (v.numel() != 1) {
    throw ShapeError("ConstantOfShape value must hold exactly one element, got shape " + shapeStr(v.shape()));
  }
  return v;
}

Shape shapeFromTensor(const Tensor& t, const char* what) {
  const auto dims = dm::intValues(t, what);
  for (int64_t d : dims) {
    if (d < 0) throw ShapeError(std::string(what) + " " + dm::dimsStr(dims) + " has a negative dim");
  }
  return dims;
}

void inferConstantOfShape(InferContext& ctx) {
  const Shape out =
      shapeFromTensor(ctx.requireConstInput(0, "ConstantOfShape shape"), "ConstantOfShape shape");
  ctx.setOutput(0, fillValue(ctx.node()).dtype(), out);
}

class FillKernel : public Kernel {
 public:
  explicit FillKernel(const KernelContext& ctx) : value_(fillValue(ctx.node)) {
    dm::dispatchChunk(value_.nbytes(), [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dm::dispatchChunk(value_.nbytes(), [&](auto chunk) {
      constexpr size_t N = sizeof(chunk);
      unsigned char* dst = static_cast<unsigned char*>(io.outputs[0].data);
      const int64_t n = io.outputs[0].numel();
      for (int64_t i = 0; i < n; ++i) dm::copyChunk<N>(dst + i * static_cast<int64_t>(N), value_.raw());
    });
  }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- Range

// Number of elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
// The difference is taken in the element type, as ONNX Runtime does.
template <typename T>
int64_t rangeCount(T start, T limit, T delta) {
  if (delta == T(0)) throw ShapeError("Range delta is 0");
  const double n = std::ceil(static_cast<double>(limit - start) / static_cast<double>(delta));
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

template <typename F>
void dispatchRangeType(DType t, F&& f) {
  switch (t) {
    case DType::Float32: f(float{}); return;
    case DType::Float64: f(double{}); return;
    case DType::Int16: f(int16_t{}); return;
    case DType::Int32: f(int32_t{}); return;
    case DType::Int64: f(int64_t{}); return;
    default: throw UnsupportedOpError(std::string("Range does not support ") + dtypeName(t));
  }
}

template <typename T>
T scalarOf(const Tensor& t, const char* what) {
  if (t.numel() != 1)
    throw ShapeError(std::string(what) + " must be a scalar, got shape " + shapeStr(t.shape()));
  return t.data<T>()[0];
}

void inferRange(InferContext& ctx) {
  const DType dtype = ctx.inputDType(0);
  for (size_t i = 1; i < 3; ++i) {
    if (ctx.inputDType(i) != dtype) throw ShapeError("Range start, limit and delta must have one dtype");
  }
  dispatchRangeType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T start = scalarOf<T>(ctx.requireConstInput(0, "Range start"), "Range start");
    const T limit = scalarOf<T>(ctx.requireConstInput(1, "Range limit"), "Range limit");
    const T delta = scalarOf<T>(ctx.requireConstInput(2, "Range delta"), "Range delta");
    ctx.setOutput(0, dtype, {rangeCount(start, limit, delta)});
  });
}

class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const KernelContext& ctx) : dtype_(ctx.input_types[0].dtype) {
    dispatchRangeType(dtype_, [](auto) {});
  }
  void run(const KernelIO& io) const override {
    dispatchRangeType(dtype_, [&](auto tag) {
      using T = decltype(tag);
      T value = *io.inputs[0].as<T>();
      const T delta = *io.inputs[2].as<T>();
      T* out = io.outputs[0].as<T>();
      const int64_t n = io.outputs[0].numel();
      // Accumulates like the ONNX function body and ONNX Runtime (not start + i * delta), so
      // float results match them to the bit.
      for (int64_t i = 0; i < n; ++i, value = static_cast<T>(value + delta)) out[i] = value;
    });
  }

 private:
  DType dtype_;
};

// ---------------------------------------------------------------- Constant

// The tensor a Constant node holds, from whichever value* attribute it carries.
Tensor constantValue(const Node& node) {
  const Attributes& a = node.attrs();
  if (a.has("value")) return a.t("value");
  if (a.has("value_float")) return Tensor::scalar<float>(a.f("value_float"));
  if (a.has("value_int")) return Tensor::scalar<int64_t>(a.i("value_int"));
  if (a.has("value_floats")) {
    const auto& v = a.floats("value_floats");
    return Tensor::fromVector(v, {static_cast<int64_t>(v.size())});
  }
  if (a.has("value_ints")) {
    const auto& v = a.ints("value_ints");
    return Tensor::fromVector(v, {static_cast<int64_t>(v.size())});
  }
  throw UnsupportedOpError(
      "Constant has none of value / value_float(s) / value_int(s) (string and sparse constants "
      "are not supported)");
}

void inferConstant(InferContext& ctx) {
  const Tensor v = constantValue(ctx.node());
  ctx.setOutput(0, v.dtype(), v.shape());
}

class ConstantKernel : public Kernel {
 public:
  explicit ConstantKernel(const KernelContext& ctx) : value_(constantValue(ctx.node)) {}
  void run(const KernelIO& io) const override {
    if (value_.nbytes()) std::memcpy(io.outputs[0].data, value_.raw(), value_.nbytes());
  }

 private:
  Tensor value_;
};

}  // namespace

void registerDmGenerateOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Shape")
      .quantClass(QuantClass::Float)
      .traits(OpTrait::ReadsShapeOnly)
      .inputs(1)
      .infer(dm::namedInfer(inferShape))
      .kernel(dm::namedKernel(dm::kernelOf<ShapeKernel>()))
      .types(any)
      .doc("the input's dims [start, end) as int64");
  reg.add("Size")
      .quantClass(QuantClass::Float)
      .traits(OpTrait::ReadsShapeOnly)
      .inputs(1)
      .infer(dm::namedInfer(inferSize))
      .kernel(dm::namedKernel(dm::kernelOf<SizeKernel>()))
      .types(any)
      .doc("the input's element count as an int64 scalar");
  reg.add("ConstantOfShape")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(dm::namedInfer(inferConstantOfShape))
      .kernel(dm::namedKernel(dm::kernelOf<FillKernel>()))
      .types({DType::Int64})
      .doc("a tensor of the given shape filled with the value attribute (default float 0)");
  reg.add("Range")
      .quantClass(QuantClass::Float)
      .inputs(3)
      .infer(dm::namedInfer(inferRange))
      .kernel(dm::namedKernel(dm::kernelOf<RangeKernel>()))
      .types({DType::Float32, DType::Float64, DType::Int16, DType::Int32, DType::Int64})
      .doc("start, start + delta, ... up to (not including) limit");
  reg.add("Constant")
      .quantClass(QuantClass::Float)
      .inputs(0)
      .infer(dm::namedInfer(inferConstant))
      .kernel(dm::namedKernel(dm::kernelOf<ConstantKernel>()))
      .doc("the tensor of its value* attribute");
}

}  // namespace npuc
