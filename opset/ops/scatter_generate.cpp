// Ops that build a tensor from positions rather than move one: OneHot (off_value everywhere,
// on_value at each index along a new axis) and EyeLike (ones on the k-th diagonal of a 2-D
// tensor shaped like the input). OneHot folds when its inputs are constants; EyeLike's output
// depends on its input's static shape only, so constant folding (passes/constant_folding.cpp)
// makes it a constant whatever its input.
#include <cmath>
#include <cstring>
#include <limits>

#include "opset/ops/scatter_common.h"

namespace npuc {
namespace {

// ---------------------------------------------------------------- OneHot

int64_t oneHotDepth(const Node& n, const Tensor& t) {
  if (t.numel() != 1)
    throw ShapeError(n.opType() + ": depth must hold one value, got shape " + shapeStr(t.shape()));
  const double d = t.doubleAt(0);
  if (!(d >= 1) || d > static_cast<double>(std::numeric_limits<int32_t>::max())) {
    throw ShapeError(n.opType() + ": depth " + std::to_string(d) + " must be a positive count");
  }
  return static_cast<int64_t>(d);
}

void inferOneHot(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape& idx = ctx.inputShape(0);
  const int64_t depth = oneHotDepth(n, ctx.requireConstInput(1, "OneHot depth"));
  const Shape& values = ctx.inputShape(2);
  if (scatter::numelOf(values) != 2) {
    throw ShapeError(n.opType() + ": values must hold [off_value, on_value], got shape " + shapeStr(values));
  }
  const int64_t out_rank = static_cast<int64_t>(idx.size()) + 1;
  const size_t axis = static_cast<size_t>(normalizeAxis(n.attrs().i("axis", -1), out_rank, "OneHot axis"));
  Shape out = idx;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  ctx.setOutput(0, ctx.inputDType(2), out);
}

class OneHotKernel : public Kernel {
 public:
  explicit OneHotKernel(const KernelContext& ctx) : idx_dtype_(ctx.input_types[0].dtype) {
    const Shape& out = ctx.output_types[0].shape;
    const size_t axis = static_cast<size_t>(
        normalizeAxis(ctx.node.attrs().i("axis", -1), static_cast<int64_t>(out.size()), "OneHot axis"));
    depth_ = out[axis];
    outer_ = scatter::numelOf(out, 0, axis);
    inner_ = scatter::numelOf(out, axis + 1);
    elem_ = dtypeSize(ctx.output_types[0].dtype);
    ew::dispatchAllNumeric(idx_dtype_, "OneHot indices", [](auto) {});
  }
  void run(const KernelIO& io) const override {
    auto* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const auto* off = static_cast<const unsigned char*>(io.inputs[2].data);
    const unsigned char* on = off + elem_;
    const int64_t total = outer_ * depth_ * inner_;
    for (int64_t i = 0; i < total; ++i) std::memcpy(dst + i * static_cast<int64_t>(elem_), off, elem_);
    ew::dispatchAllNumeric(idx_dtype_, "OneHot indices", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* idx = io.inputs[0].as<const T>();
      for (int64_t o = 0; o < outer_; ++o) {
        for (int64_t j = 0; j < inner_; ++j) {
          // Fractional indices truncate toward zero (ONNX casts them to int64); an index outside
          // [-depth, depth) leaves its row all off_value, as the spec says.
          const double v = static_cast<double>(idx[o * inner_ + j]);
          if (!std::isfinite(v)) continue;
          int64_t k = static_cast<int64_t>(std::trunc(v));
          if (k < 0) k += depth_;
          if (k < 0 || k >= depth_) continue;
          std::memcpy(dst + ((o * depth_ + k) * inner_ + j) * static_cast<int64_t>(elem_), on, elem_);
        }
      }
    });
  }

 private:
  DType idx_dtype_;
  int64_t depth_ = 0, outer_ = 1, inner_ = 1;
  size_t elem_ = 0;
};

// ---------------------------------------------------------------- EyeLike

DType eyeLikeDType(const Node& n, DType input) {
  if (!n.attrs().has("dtype")) return input;
  const DType t = dtypeFromOnnx(static_cast<int32_t>(n.attrs().i("dtype")));
  if (!isStorable(t)) {
    throw ShapeError(n.opType() + ": dtype " + std::to_string(n.attrs().i("dtype")) +
                     " is not a storable type");
  }
  return t;
}

void inferEyeLike(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  if (in.size() != 2) throw ShapeError(ctx.node().opType() + ": input must be 2-D, got " + shapeStr(in));
  ctx.setOutput(0, eyeLikeDType(ctx.node(), ctx.inputDType(0)), in);
}

// The bytes of the value 1 in `t`.
std::vector<unsigned char> oneOf(DType t) {
  std::vector<unsigned char> b(dtypeSize(t), 0);
  if (t == DType::Bool || t == DType::UInt8 || t == DType::Int8) {
    b[0] = 1;
  } else if (t == DType::Float16) {
    const uint16_t h = floatToHalf(1.0f);
    std::memcpy(b.data(), &h, sizeof h);
  } else {
    ew::dispatchAllNumeric(t, "EyeLike", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T one = 1;
      std::memcpy(b.data(), &one, sizeof one);
    });
  }
  return b;
}

class EyeLikeKernel : public Kernel {
 public:
  explicit EyeLikeKernel(const KernelContext& ctx) : one_(oneOf(ctx.output_types[0].dtype)) {
    const Shape& s = ctx.output_types[0].shape;
    rows_ = s[0];
    cols_ = s[1];
    k_ = ctx.node.attrs().i("k", 0);
  }
  void run(const KernelIO& io) const override {
    auto* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const size_t e = one_.size();
    std::memset(dst, 0, static_cast<size_t>(rows_ * cols_) * e);
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t c = r + k_;
      if (c >= 0 && c < cols_) std::memcpy(dst + (r * cols_ + c) * static_cast<int64_t>(e), one_.data(), e);
    }
  }

 private:
  std::vector<unsigned char> one_;
  int64_t rows_ = 0, cols_ = 0, k_ = 0;
};

}  // namespace

void registerScatterGenerateOps(OpRegistry& reg) {
  // Float in int8 models: on/off values (OneHot) and 1 (EyeLike) need not lie in the range of any
  // input, so no input's parameters can be shared; constant inputs fold before quantization.
  reg.add("OneHot")
      .quantClass(QuantClass::Float)
      .cpuOnly("it writes at positions read from index data at run time (with constant inputs it folds)")
      .inputs(3)
      .infer(dm::namedInfer(inferOneHot))
      .kernel(dm::namedKernel(dm::kernelOf<OneHotKernel>()))
      .types(ew::allNumericDTypes())
      .since(11)
      .doc("on_value at each index along a new `axis` of size depth, off_value elsewhere");
  reg.add("EyeLike")
      .quantClass(QuantClass::Float)
      .traits(OpTrait::ReadsShapeOnly)
      .cpuOnly(
          "its output depends only on the input's static shape, so constant folding makes it a constant "
          "(it runs only when folding is off or over the fold limit)")
      .inputs(1)
      .infer(dm::namedInfer(inferEyeLike))
      .kernel(dm::namedKernel(dm::kernelOf<EyeLikeKernel>()))
      .types(dm::allStorableTypes())
      .since(9)
      .doc(
          "ones on the k-th diagonal of a 2-D tensor shaped like the input (dtype attribute or the input's)");
}

}  // namespace npuc
