// GatherND and ScatterND: the index tensor's last dim holds k coordinates into the leading dims
// of data (after `batch_dims` shared batch dims for GatherND); each coordinate tuple selects a
// whole slice data[i_0, ..., i_{k-1}, :, ...], copied out (GatherND) or written with an optional
// reduction (ScatterND). Coordinates may be negative (counted from the end of their axis) and are
// checked one by one before use.
#include <cstring>

#include "opset/ops/scatter_common.h"

namespace npuc {
namespace {

using scatter::IndexReader;
using scatter::nodeLabel;

// ---------------------------------------------------------------- GatherND

struct GatherNdGeometry {
  size_t batch_dims = 0;
  int64_t k = 0;  // coordinates per index tuple
  Shape out;
};

GatherNdGeometry gatherNdGeometry(const Node& n, const Shape& data, const Shape& idx) {
  const int64_t b = n.attrs().i("batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  if (r < 1 || q < 1) {
    throw ShapeError(n.opType() + ": data " + shapeStr(data) + " and indices " + shapeStr(idx) +
                     " must both have rank >= 1");
  }
  if (b < 0 || b >= std::min(r, q)) {
    throw ShapeError(n.opType() + ": batch_dims " + std::to_string(b) + " must be in [0, " +
                     std::to_string(std::min(r, q)) + ") for data " + shapeStr(data) + " and indices " +
                     shapeStr(idx));
  }
  const int64_t k = idx.back();
  if (k < 1 || k > r - b) {
    throw ShapeError(n.opType() + ": the last dim of indices " + shapeStr(idx) + " is " + std::to_string(k) +
                     ", it must be in [1, " + std::to_string(r - b) + "] for data " + shapeStr(data) +
                     " with batch_dims " + std::to_string(b));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data[d] != idx[d]) {
      throw ShapeError(n.opType() + ": batch dim " + std::to_string(d) + " differs between data " +
                       shapeStr(data) + " and indices " + shapeStr(idx));
    }
  }
  GatherNdGeometry g{static_cast<size_t>(b), k, Shape(idx.begin(), idx.end() - 1)};
  g.out.insert(g.out.end(), data.begin() + b + k, data.end());
  return g;
}

void inferGatherNd(InferContext& ctx) {
  scatter::checkIndexDType(ctx.node(), ctx.inputDType(1), "GatherND indices");
  const auto g = gatherNdGeometry(ctx.node(), ctx.inputShape(0), ctx.inputShape(1));
  ctx.setOutput(0, ctx.inputDType(0), g.out);
}

class GatherNdKernel : public Kernel {
 public:
  explicit GatherNdKernel(const KernelContext& ctx) : label_(nodeLabel(ctx.node)) {
    const Shape& data = ctx.input_types[0].shape;
    const Shape& idx = ctx.input_types[1].shape;
    const auto g = gatherNdGeometry(ctx.node, data, idx);
    k_ = g.k;
    const size_t b = g.batch_dims;
    batches_ = scatter::numelOf(data, 0, b);
    tuples_ = scatter::numelOf(idx, b, idx.size() - 1);
    dims_.assign(data.begin() + static_cast<std::ptrdiff_t>(b), data.begin() + static_cast<std::ptrdiff_t>(b) + k_);
    const Shape batch_shape(data.begin() + static_cast<std::ptrdiff_t>(b), data.end());
    strides_ = scatter::elementStrides(batch_shape);
    strides_.resize(static_cast<size_t>(k_));
    elem_ = dtypeSize(ctx.input_types[0].dtype);
    slice_bytes_ = scatter::numelOf(data, b + static_cast<size_t>(k_)) * static_cast<int64_t>(elem_);
    batch_bytes_ = scatter::numelOf(batch_shape) * static_cast<int64_t>(elem_);
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
  }
  void run(const KernelIO& io) const override {
    const auto* src = static_cast<const unsigned char*>(io.inputs[0].data);
    auto* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    int64_t t = 0;  // index tuple, counted over all batches
    for (int64_t bi = 0; bi < batches_; ++bi) {
      const unsigned char* base = src + bi * batch_bytes_;
      for (int64_t j = 0; j < tuples_; ++j, ++t, dst += slice_bytes_) {
        int64_t off = 0;
        for (int64_t c = 0; c < k_; ++c) {
          const int64_t pos = t * k_ + c;
          off += scatter::wrapIndex(idx[pos], dims_[c], label_, pos, c) * strides_[c];
        }
        std::memcpy(dst, base + off * static_cast<int64_t>(elem_), static_cast<size_t>(slice_bytes_));
      }
    }
  }

 private:
  std::string label_;
  int64_t k_ = 0, batches_ = 1, tuples_ = 1, slice_bytes_ = 0, batch_bytes_ = 0;
  std::vector<int64_t> dims_, strides_;
  size_t elem_ = 0;
  bool idx64_ = true;
};

// ---------------------------------------------------------------- ScatterND

// Checks data / indices / updates shapes: updates = indices[:-1] + data[k:]. Returns k.
int64_t checkScatterNdShapes(const Node& n, const Shape& data, const Shape& idx, const Shape& upd) {
  if (data.empty() || idx.empty()) {
    throw ShapeError(n.opType() + ": data " + shapeStr(data) + " and indices " + shapeStr(idx) +
                     " must both have rank >= 1");
  }
  const int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(data.size())) {
    throw ShapeError(n.opType() + ": the last dim of indices " + shapeStr(idx) + " is " + std::to_string(k) +
                     ", it must be in [1, " + std::to_string(data.size()) + "] for data " + shapeStr(data));
  }
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (upd != want) {
    throw ShapeError(n.opType() + ": updates " + shapeStr(upd) + " must have shape " + shapeStr(want) +
                     " (indices " + shapeStr(idx) + " without the last dim, then data " + shapeStr(data) +
                     " from dim " + std::to_string(k) + ")");
  }
  return k;
}

void inferScatterNd(InferContext& ctx) {
  const Node& n = ctx.node();
  scatter::checkIndexDType(n, ctx.inputDType(1), "ScatterND indices");
  scatter::parseReduction(n);
  if (ctx.inputDType(2) != ctx.inputDType(0)) {
    throw ShapeError(n.opType() + ": updates are " + dtypeName(ctx.inputDType(2)) + " but data is " +
                     dtypeName(ctx.inputDType(0)));
  }
  checkScatterNdShapes(n, ctx.inputShape(0), ctx.inputShape(1), ctx.inputShape(2));
  ctx.setOutput(0, ctx.inputDType(0), ctx.inputShape(0));
}

class ScatterNdKernel : public Kernel {
 public:
  explicit ScatterNdKernel(const KernelContext& ctx)
      : label_(nodeLabel(ctx.node)), reduction_(scatter::parseReduction(ctx.node)) {
    const Shape& data = ctx.input_types[0].shape;
    const Shape& idx = ctx.input_types[1].shape;
    k_ = checkScatterNdShapes(ctx.node, data, idx, ctx.input_types[2].shape);
    dtype_ = ctx.input_types[0].dtype;
    tuples_ = scatter::numelOf(idx, 0, idx.size() - 1);
    dims_.assign(data.begin(), data.begin() + k_);
    strides_ = scatter::elementStrides(data);
    strides_.resize(static_cast<size_t>(k_));
    slice_ = scatter::numelOf(data, static_cast<size_t>(k_));
    total_bytes_ = static_cast<size_t>(scatter::numelOf(data)) * dtypeSize(dtype_);
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
    if (reduction_ != scatter::Reduction::None) ew::dispatchAllNumeric(dtype_, "ScatterND", [](auto) {});
  }
  void run(const KernelIO& io) const override {
    if (io.outputs[0].data != io.inputs[0].data) std::memcpy(io.outputs[0].data, io.inputs[0].data, total_bytes_);
    if (reduction_ == scatter::Reduction::None) {
      scatterRows<unsigned char>(io, static_cast<int64_t>(dtypeSize(dtype_)));
    } else {
      ew::dispatchAllNumeric(dtype_, "ScatterND", [&](auto tag) {
        using T = typename decltype(tag)::type;
        scatterRows<T>(io, 1);
      });
    }
  }

 private:
  // T = unsigned char with `scale` = element size: plain byte copies (no reduction, any dtype);
  // else the element type, reduced element by element.
  template <typename T>
  void scatterRows(const KernelIO& io, int64_t scale) const {
    T* out = static_cast<T*>(io.outputs[0].data);
    const T* upd = static_cast<const T*>(io.inputs[2].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    const int64_t row = slice_ * scale;
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t off = 0;
      for (int64_t c = 0; c < k_; ++c) {
        const int64_t pos = t * k_ + c;
        off += scatter::wrapIndex(idx[pos], dims_[c], label_, pos, c) * strides_[c];
      }
      T* dst = out + off * scale;
      const T* src = upd + t * row;
      if (reduction_ == scatter::Reduction::None) {
        std::memcpy(dst, src, static_cast<size_t>(row) * sizeof(T));
      } else {
        for (int64_t j = 0; j < row; ++j) scatter::reduceInto(reduction_, dst[j], src[j]);
      }
    }
  }

  std::string label_;
  scatter::Reduction reduction_;
  DType dtype_ = DType::Float32;
  int64_t k_ = 0, tuples_ = 0, slice_ = 0;
  size_t total_bytes_ = 0;
  std::vector<int64_t> dims_, strides_;
  bool idx64_ = true;
};

}  // namespace

void registerScatterNdOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("GatherND")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .cpuOnly("the addresses it reads come from index data at run time")
      .inputs(2)
      .infer(dm::namedInfer(inferGatherNd))
      .kernel(dm::namedKernel(dm::kernelOf<GatherNdKernel>()))
      .types(any)
      .since(12)
      .doc("slices of data picked by coordinate tuples (last dim of indices), after batch_dims shared dims");
  // Updates come from another tensor with its own range: an int8 byte copy would need them
  // rescaled onto data's grid first, which no simulator step does, so ScatterND stays in FP16
  // (exact for a copy). YOLO-style constant-index ScatterND becomes Slice/Concat
  // (passes/scatter_nd_to_concat.cpp), whose int8 rules are the data-movement and Concat ones.
  reg.add("ScatterND")
      .quantClass(QuantClass::Float)
      .cpuOnly("the addresses it writes come from index data at run time (a constant-index ScatterND over a box "
               "is rewritten to Slice/Concat, which the NPU runs)")
      .inputs(3)
      .infer(dm::namedInfer(inferScatterNd))
      .kernel(dm::namedKernel(dm::kernelOf<ScatterNdKernel>()))
      .types(any)
      .since(11)
      .doc("copy of data with slices at coordinate tuples replaced by updates (reduction none/add/mul/max/min)");
}

}  // namespace npuc
