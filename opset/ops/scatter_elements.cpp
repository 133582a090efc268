// ScatterElements (and Scatter, its opset 9/10 name with the same meaning and no reduction):
// a copy of data where, for every position p of indices, the element at p with the `axis`
// coordinate replaced by indices[p] receives updates[p] (or is reduced with it: add, mul, max,
// min). indices and updates have the same shape, of data's rank and no larger than data on the
// other axes. Indices may be negative; each one is checked before it is written through.
#include <array>
#include <cstring>
#include <type_traits>

#include "opset/ops/scatter_common.h"

namespace npuc {
namespace {

using scatter::IndexReader;
using scatter::nodeLabel;

size_t checkScatterElementsShapes(const Node& n, const Shape& data, const Shape& idx, const Shape& upd) {
  if (data.empty()) throw ShapeError(n.opType() + ": data must have rank >= 1, got a scalar");
  if (idx.size() != data.size()) {
    throw ShapeError(n.opType() + ": indices " + shapeStr(idx) + " must have the rank of data " + shapeStr(data));
  }
  if (upd != idx) {
    throw ShapeError(n.opType() + ": updates " + shapeStr(upd) + " must have the shape of indices " +
                     shapeStr(idx));
  }
  const size_t axis = static_cast<size_t>(
      normalizeAxis(n.attrs().i("axis", 0), static_cast<int64_t>(data.size()), "ScatterElements axis"));
  for (size_t d = 0; d < data.size(); ++d) {
    if (d != axis && idx[d] > data[d]) {
      throw ShapeError(n.opType() + ": indices " + shapeStr(idx) + " exceed data " + shapeStr(data) +
                       " on axis " + std::to_string(d));
    }
  }
  return axis;
}

void inferScatterElements(InferContext& ctx) {
  const Node& n = ctx.node();
  scatter::checkIndexDType(n, ctx.inputDType(1), "indices");
  scatter::parseReduction(n);
  if (ctx.inputDType(2) != ctx.inputDType(0)) {
    throw ShapeError(n.opType() + ": updates are " + dtypeName(ctx.inputDType(2)) + " but data is " +
                     dtypeName(ctx.inputDType(0)));
  }
  checkScatterElementsShapes(n, ctx.inputShape(0), ctx.inputShape(1), ctx.inputShape(2));
  ctx.setOutput(0, ctx.inputDType(0), ctx.inputShape(0));
}

class ScatterElementsKernel : public Kernel {
 public:
  explicit ScatterElementsKernel(const KernelContext& ctx)
      : label_(nodeLabel(ctx.node)), reduction_(scatter::parseReduction(ctx.node)) {
    const Shape& data = ctx.input_types[0].shape;
    idx_shape_ = ctx.input_types[1].shape;
    axis_ = checkScatterElementsShapes(ctx.node, data, idx_shape_, ctx.input_types[2].shape);
    dtype_ = ctx.input_types[0].dtype;
    data_strides_ = scatter::elementStrides(data);
    axis_dim_ = data[axis_];
    total_bytes_ = static_cast<size_t>(scatter::numelOf(data)) * dtypeSize(dtype_);
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
    if (reduction_ == scatter::Reduction::None) {
      dm::dispatchChunk(dtypeSize(dtype_), [](auto) {});
    } else {
      ew::dispatchAllNumeric(dtype_, "ScatterElements", [](auto) {});
    }
  }
  void run(const KernelIO& io) const override {
    if (io.outputs[0].data != io.inputs[0].data) std::memcpy(io.outputs[0].data, io.inputs[0].data, total_bytes_);
    if (scatter::numelOf(idx_shape_) == 0) return;
    if (reduction_ == scatter::Reduction::None) {
      dm::dispatchChunk(dtypeSize(dtype_), [&](auto chunk) { scatterAll<decltype(chunk)>(io); });
    } else {
      ew::dispatchAllNumeric(dtype_, "ScatterElements", [&](auto tag) {
        scatterAll<typename decltype(tag)::type>(io);
      });
    }
  }

 private:
  // Walks indices in row-major order with an odometer (no allocation) and writes each update.
  template <typename T>
  void scatterAll(const KernelIO& io) const {
    T* out = static_cast<T*>(io.outputs[0].data);
    const T* upd = static_cast<const T*>(io.inputs[2].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    const size_t r = idx_shape_.size();
    std::array<int64_t, dm::kMaxDims> pos{};
    if (r > dm::kMaxDims) throw UnsupportedOpError(label_ + ": rank > 32 is not supported");
    const int64_t n = scatter::numelOf(idx_shape_);
    for (int64_t p = 0; p < n; ++p) {
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) {
        if (d != axis_) off += pos[d] * data_strides_[d];
      }
      off += scatter::wrapIndex(idx[p], axis_dim_, label_, p, static_cast<int64_t>(axis_)) * data_strides_[axis_];
      if constexpr (std::is_class_v<T>) {  // a dm::Chunk: plain copy
        out[off] = upd[p];
      } else {
        scatter::reduceInto(reduction_, out[off], upd[p]);
      }
      for (size_t d = r; d-- > 0;) {
        if (++pos[d] < idx_shape_[d]) break;
        pos[d] = 0;
      }
    }
  }

  std::string label_;
  scatter::Reduction reduction_;
  DType dtype_ = DType::Float32;
  Shape idx_shape_;
  size_t axis_ = 0;
  std::vector<int64_t> data_strides_;
  int64_t axis_dim_ = 0;
  size_t total_bytes_ = 0;
  bool idx64_ = true;
};

}  // namespace

void registerScatterElementsOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  const char* why_cpu = "the addresses it writes come from index data at run time";
  // FP16 in int8 models for the reason ScatterND gives (scatter_nd.cpp): the updates' range is
  // not data's, and a byte copy would need a rescale no simulator step has.
  for (const char* op : {"ScatterElements", "Scatter"}) {
    reg.add(op)
        .quantClass(QuantClass::Float)
        .cpuOnly(why_cpu)
        .inputs(3)
        .infer(dm::namedInfer(inferScatterElements))
        .kernel(dm::namedKernel(dm::kernelOf<ScatterElementsKernel>()))
        .types(any)
        .since(std::string(op) == "Scatter" ? 9 : 11)
        .doc(std::string(op) == "Scatter"
                 ? "opset 9/10 name of ScatterElements (no reduction)"
                 : "copy of data with updates written at per-element indices along `axis` (reduction "
                   "none/add/mul/max/min)");
  }
}

}  // namespace npuc
