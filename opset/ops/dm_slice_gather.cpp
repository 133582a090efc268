// Indexing ops: Slice (a strided view, run on dm::StridedCopy), Gather (whole inner rows picked
// by an index list) and GatherElements (one element per index).
#include <algorithm>
#include <limits>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

using dm::StridedCopy;

// ---------------------------------------------------------------- Slice

struct SliceSpec {
  Shape out;
  std::vector<int64_t> start;  // first input index per dim
  std::vector<int64_t> step;   // per dim, may be negative
};

// ONNX Slice clamping: negative starts/ends count from the end; with a positive step both clamp
// to [0, dim], with a negative step start clamps to [0, dim-1] and end to [-1, dim-1]. INT64_MAX
// and INT64_MIN (the "to the end" sentinels of exporters) fall out of the same clamping.
SliceSpec sliceSpec(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    const std::vector<int64_t>* axes_in, const std::vector<int64_t>* steps_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) {
    throw ShapeError("Slice starts " + dm::dimsStr(starts) + " and ends " + dm::dimsStr(ends) +
                     " differ in length");
  }
  std::vector<int64_t> axes(starts.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (axes_in) axes = dm::normalizedAxes(*axes_in, rank, "Slice axis");
  if (axes.size() != starts.size() || (steps_in && steps_in->size() != starts.size())) {
    throw ShapeError("Slice starts, ends, axes and steps must have the same length, got " +
                     std::to_string(starts.size()) + ", " + std::to_string(ends.size()) + ", " +
                     std::to_string(axes.size()) + ", " + std::to_string(steps_in ? steps_in->size() : 0));
  }
  if (static_cast<int64_t>(axes.size()) > rank) {
    throw ShapeError("Slice has " + std::to_string(axes.size()) + " axes for an input of rank " +
                     std::to_string(rank));
  }
  SliceSpec spec{in, std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1)};
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    const int64_t dim = in[a];
    const int64_t step = steps_in ? (*steps_in)[i] : 1;
    if (step == 0) throw ShapeError("Slice step on axis " + std::to_string(a) + " is 0");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t len = 0;
    if (dim == 0) {
      s = 0;  // nothing to take, and the clamping ranges below would be empty
    } else if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e - step - 1) / -step : 0;
    }
    spec.out[a] = len;
    spec.start[a] = s;
    spec.step[a] = step;
  }
  return spec;
}

// Reads the Slice parameter inputs 1..4 through `get` (a constant lookup) and builds the spec.
template <typename GetConst>
SliceSpec sliceSpecFrom(const Shape& in, size_t num_inputs, GetConst&& get) {
  const auto starts = dm::intValues(get(1, "Slice starts"), "Slice starts");
  const auto ends = dm::intValues(get(2, "Slice ends"), "Slice ends");
  std::vector<int64_t> axes, steps;
  const bool has_axes = num_inputs > 3 && get.has(3);
  const bool has_steps = num_inputs > 4 && get.has(4);
  if (has_axes) axes = dm::intValues(get(3, "Slice axes"), "Slice axes");
  if (has_steps) steps = dm::intValues(get(4, "Slice steps"), "Slice steps");
  return sliceSpec(in, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
}

struct InferConsts {
  const InferContext& ctx;
  const Tensor& operator()(size_t i, const char* what) const { return ctx.requireConstInput(i, what); }
  bool has(size_t i) const { return ctx.hasInput(i); }
};

struct KernelConsts {
  const KernelContext& ctx;
  const Tensor& operator()(size_t i, const char* what) const {
    const Tensor* t = ctx.constInput(i);
    if (!t) throw ShapeError(std::string(what) + " (input " + std::to_string(i) + ") must be a constant");
    return *t;
  }
  bool has(size_t i) const { return ctx.node.hasInput(i); }
};

void inferSlice(InferContext& ctx) {
  const SliceSpec spec = sliceSpecFrom(ctx.inputShape(0), ctx.numInputs(), InferConsts{ctx});
  ctx.setOutput(0, ctx.inputDType(0), spec.out);
}

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const KernelContext& ctx) {
    const TensorView& in = ctx.input_types[0];
    const SliceSpec spec = sliceSpecFrom(in.shape, ctx.node.numInputs(), KernelConsts{ctx});
    const size_t elem = dtypeSize(in.dtype);
    std::vector<int64_t> strides = StridedCopy::contiguousStrides(in.shape, elem);
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      offset += spec.start[d] * strides[d];
      strides[d] *= spec.step[d];
    }
    copy_ = StridedCopy(spec.out, strides, offset, elem);
  }
  void run(const KernelIO& io) const override { copy_.run(io.inputs[0].data, io.outputs[0].data); }

 private:
  StridedCopy copy_;
};

// ---------------------------------------------------------------- shared index reading

// Index tensors are int32 or int64; negative values count from the end of the axis.
struct IndexReader {
  const void* data;
  bool is64;
  int64_t operator[](int64_t i) const {
    return is64 ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

void checkIndexDType(DType t, const char* op) {
  if (t != DType::Int64 && t != DType::Int32) {
    throw ShapeError(std::string(op) + " indices must be int32 or int64, got " + dtypeName(t));
  }
}

// Maps a possibly negative index into [0, dim) or throws InputError naming the op.
inline int64_t wrapIndex(int64_t idx, int64_t dim, const char* op) {
  const int64_t k = idx < 0 ? idx + dim : idx;
  if (k < 0 || k >= dim) {
    throw InputError(std::string(op) + " index " + std::to_string(idx) +
                     " is out of range for an axis of size " + std::to_string(dim));
  }
  return k;
}

// ---------------------------------------------------------------- Gather

void inferGather(InferContext& ctx) {
  const Shape& data = ctx.inputShape(0);
  const Shape& idx = ctx.inputShape(1);
  checkIndexDType(ctx.inputDType(1), "Gather");
  if (data.empty()) throw ShapeError("Gather data must have rank >= 1, got a scalar");
  const size_t axis = static_cast<size_t>(
      normalizeAxis(ctx.attrs().i("axis", 0), static_cast<int64_t>(data.size()), "Gather axis"));
  Shape out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
  ctx.setOutput(0, ctx.inputDType(0), out);
}

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const KernelContext& ctx) {
    const Shape& data = ctx.input_types[0].shape;
    const size_t axis = static_cast<size_t>(
        normalizeAxis(ctx.node.attrs().i("axis", 0), static_cast<int64_t>(data.size()), "axis"));
    for (size_t d = 0; d < axis; ++d) outer_ *= data[d];
    axis_dim_ = data[axis];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
    row_bytes_ = static_cast<size_t>(inner) * dtypeSize(ctx.input_types[0].dtype);
    num_idx_ = shapeNumel(ctx.input_types[1].shape);
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
  }
  void run(const KernelIO& io) const override {
    switch (row_bytes_) {
      case 1: gather<1>(io); return;
      case 2: gather<2>(io); return;
      case 4: gather<4>(io); return;
      case 8: gather<8>(io); return;
      default: gather<0>(io); return;
    }
  }

 private:
  // N > 0: rows of exactly N bytes (single-element gathers, the shape-arithmetic case);
  // N == 0: rows of row_bytes_ moved with memcpy.
  template <size_t N>
  void gather(const KernelIO& io) const {
    const unsigned char* src = static_cast<const unsigned char*>(io.inputs[0].data);
    unsigned char* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    const size_t row = N ? N : row_bytes_;
    for (int64_t o = 0; o < outer_; ++o) {
      const unsigned char* base = src + o * axis_dim_ * static_cast<int64_t>(row);
      for (int64_t j = 0; j < num_idx_; ++j, dst += row) {
        const unsigned char* p = base + wrapIndex(idx[j], axis_dim_, "Gather") * static_cast<int64_t>(row);
        if constexpr (N != 0) {
          dm::copyChunk<N>(dst, p);
        } else {
          std::memcpy(dst, p, row);
        }
      }
    }
  }

  int64_t outer_ = 1;
  int64_t axis_dim_ = 0;
  size_t row_bytes_ = 0;
  int64_t num_idx_ = 0;
  bool idx64_ = true;
};

// ---------------------------------------------------------------- GatherElements

void inferGatherElements(InferContext& ctx) {
  const Shape& data = ctx.inputShape(0);
  const Shape& idx = ctx.inputShape(1);
  checkIndexDType(ctx.inputDType(1), "GatherElements");
  if (data.size() != idx.size() || data.empty()) {
    throw ShapeError("GatherElements data " + shapeStr(data) + " and indices " + shapeStr(idx) +
                     " must have the same rank >= 1");
  }
  const size_t axis = static_cast<size_t>(
      normalizeAxis(ctx.attrs().i("axis", 0), static_cast<int64_t>(data.size()), "GatherElements axis"));
  for (size_t d = 0; d < data.size(); ++d) {
    if (d != axis && idx[d] > data[d]) {
      throw ShapeError("GatherElements indices " + shapeStr(idx) + " exceed data " + shapeStr(data) +
                       " on axis " + std::to_string(d));
    }
  }
  ctx.setOutput(0, ctx.inputDType(0), idx);
}

class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const KernelContext& ctx) {
    const Shape& data = ctx.input_types[0].shape;
    idx_shape_ = ctx.input_types[1].shape;
    const size_t rank = data.size();
    const size_t axis =
        static_cast<size_t>(normalizeAxis(ctx.node.attrs().i("axis", 0), static_cast<int64_t>(rank), "axis"));
    elem_ = dtypeSize(ctx.input_types[0].dtype);
    data_strides_ = dm::StridedCopy::contiguousStrides(data, 1);  // in elements
    axis_dim_ = data[axis];
    axis_stride_ = data_strides_[axis];
    walk_strides_ = data_strides_;
    walk_strides_[axis] = 0;  // the axis position comes from the index, not the odometer
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
    if (rank > dm::kMaxDims) throw UnsupportedOpError("GatherElements supports rank <= 32");
    dispatchElem([](auto) {});
  }
  void run(const KernelIO& io) const override {
    if (shapeNumel(idx_shape_) == 0) return;
    dispatchElem([&](auto chunk) { gather<sizeof(chunk)>(io); });
  }

 private:
  template <typename F>
  void dispatchElem(F&& f) const {
    dm::dispatchChunk(elem_, std::forward<F>(f));
  }
  template <size_t N>
  void gather(const KernelIO& io) const {
    const unsigned char* src = static_cast<const unsigned char*>(io.inputs[0].data);
    unsigned char* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    const size_t r = idx_shape_.size();
    const int64_t len = idx_shape_[r - 1];
    const int64_t step = walk_strides_[r - 1];
    dm::forEachOuter(idx_shape_, walk_strides_, r - 1, len, [&](int64_t base, int64_t flat) {
      for (int64_t j = 0; j < len; ++j) {
        const int64_t k = wrapIndex(idx[flat + j], axis_dim_, "GatherElements");
        dm::copyChunk<N>(dst + (flat + j) * static_cast<int64_t>(N),
                         src + (base + j * step + k * axis_stride_) * static_cast<int64_t>(N));
      }
    });
  }

  Shape idx_shape_;
  std::vector<int64_t> data_strides_;
  std::vector<int64_t> walk_strides_;
  int64_t axis_dim_ = 0;
  int64_t axis_stride_ = 0;
  size_t elem_ = 0;
  bool idx64_ = true;
};

}  // namespace

void registerDmSliceGatherOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Slice")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(3, 5)
      .infer(dm::namedInfer(inferSlice))
      .kernel(dm::namedKernel(dm::kernelOf<SliceKernel>()))
      .types(any)
      .doc("strided sub-tensor (starts/ends/axes/steps inputs, negative steps allowed)");
  reg.add("Gather")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(2)
      .infer(dm::namedInfer(inferGather))
      .kernel(dm::namedKernel(dm::kernelOf<GatherKernel>()))
      .types(any)
      .doc("picks slices along an axis by index (negative indices count from the end)");
  reg.add("GatherElements")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(dm::namedInfer(inferGatherElements))
      .kernel(dm::namedKernel(dm::kernelOf<GatherElementsKernel>()))
      .types(any)
      .doc("picks one element per index along an axis");
}

}  // namespace npuc
