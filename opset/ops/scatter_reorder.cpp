// Ops that move elements to positions read from a second input: ReverseSequence (the first
// sequence_lens[b] steps of batch b reversed along time_axis, the rest copied) and MaxUnpool
// (MaxPool's inverse: each input element written at the flat output position its MaxPool index
// names, zeros elsewhere). Lengths and positions are checked before use.
#include <cstring>

#include "opset/ops/scatter_common.h"

namespace npuc {
namespace {

using scatter::IndexReader;
using scatter::nodeLabel;

// ---------------------------------------------------------------- ReverseSequence

struct ReverseAxes {
  size_t batch = 1, time = 0;
};

ReverseAxes reverseAxes(const Node& n, const Shape& in) {
  if (in.size() < 2) throw ShapeError(n.opType() + ": input must have rank >= 2, got " + shapeStr(in));
  const int64_t r = static_cast<int64_t>(in.size());
  const ReverseAxes a{static_cast<size_t>(normalizeAxis(n.attrs().i("batch_axis", 1), r, "ReverseSequence batch_axis")),
                      static_cast<size_t>(normalizeAxis(n.attrs().i("time_axis", 0), r, "ReverseSequence time_axis"))};
  if (a.batch == a.time || a.batch > 1 || a.time > 1) {
    throw ShapeError(n.opType() + ": batch_axis and time_axis must be 0 and 1 in some order, got " +
                     std::to_string(a.batch) + " and " + std::to_string(a.time));
  }
  return a;
}

void inferReverseSequence(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape& in = ctx.inputShape(0);
  const ReverseAxes a = reverseAxes(n, in);
  scatter::checkIndexDType(n, ctx.inputDType(1), "sequence_lens");
  const Shape& lens = ctx.inputShape(1);
  if (lens.size() != 1 || lens[0] != in[a.batch]) {
    throw ShapeError(n.opType() + ": sequence_lens " + shapeStr(lens) + " must be 1-D with one length per batch (" +
                     std::to_string(in[a.batch]) + ") of input " + shapeStr(in));
  }
  ctx.setOutput(0, ctx.inputDType(0), in);
}

class ReverseSequenceKernel : public Kernel {
 public:
  explicit ReverseSequenceKernel(const KernelContext& ctx) : label_(nodeLabel(ctx.node)) {
    const Shape& in = ctx.input_types[0].shape;
    const ReverseAxes a = reverseAxes(ctx.node, in);
    batches_ = in[a.batch];
    steps_ = in[a.time];
    const int64_t row_bytes = scatter::numelOf(in, 2) * static_cast<int64_t>(dtypeSize(ctx.input_types[0].dtype));
    row_bytes_ = static_cast<size_t>(row_bytes);
    // Byte distance between consecutive batches / time steps in the input.
    batch_stride_ = a.batch == 0 ? steps_ * row_bytes : row_bytes;
    time_stride_ = a.time == 0 ? batches_ * row_bytes : row_bytes;
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
  }
  void run(const KernelIO& io) const override {
    const auto* src = static_cast<const unsigned char*>(io.inputs[0].data);
    auto* dst = static_cast<unsigned char*>(io.outputs[0].data);
    const IndexReader lens{io.inputs[1].data, idx64_};
    for (int64_t b = 0; b < batches_; ++b) {
      const int64_t len = lens[b];
      if (len < 0 || len > steps_) {
        throw InputError(label_ + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                         " is outside [0, " + std::to_string(steps_) + "], the time axis size");
      }
      for (int64_t t = 0; t < steps_; ++t) {
        const int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(dst + b * batch_stride_ + t * time_stride_, src + b * batch_stride_ + from * time_stride_,
                    row_bytes_);
      }
    }
  }

 private:
  std::string label_;
  int64_t batches_ = 0, steps_ = 0, batch_stride_ = 0, time_stride_ = 0;
  size_t row_bytes_ = 0;
  bool idx64_ = true;
};

// ---------------------------------------------------------------- MaxUnpool

// The output shape: output_shape (a constant input) if given, else MaxPool's input size
// (in - 1) * stride + kernel - pad_begin - pad_end per spatial dim.
Shape maxUnpoolShape(const Node& n, const Shape& x, const Tensor* output_shape) {
  if (x.size() < 3) throw ShapeError(n.opType() + ": X must be N x C x spatial..., got " + shapeStr(x));
  const size_t sp = x.size() - 2;
  const auto kernel = n.attrs().ints("kernel_shape", {});
  if (kernel.size() != sp) {
    throw ShapeError(n.opType() + ": kernel_shape " + dm::dimsStr(kernel) + " must have one entry per spatial dim of " +
                     shapeStr(x));
  }
  const auto strides = n.attrs().ints("strides", std::vector<int64_t>(sp, 1));
  const auto pads = n.attrs().ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || pads.size() != 2 * sp) {
    throw ShapeError(n.opType() + ": strides " + dm::dimsStr(strides) + " / pads " + dm::dimsStr(pads) +
                     " do not match " + std::to_string(sp) + " spatial dims");
  }
  Shape inferred = x;
  for (size_t i = 0; i < sp; ++i) {
    inferred[2 + i] = (x[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[sp + i];
    if (inferred[2 + i] < 0) throw ShapeError(n.opType() + ": the pads exceed the unpooled size for " + shapeStr(x));
  }
  if (!output_shape) return inferred;
  const auto want = dm::intValues(*output_shape, "MaxUnpool output_shape");
  if (want.size() != x.size() || want[0] != x[0] || want[1] != x[1]) {
    throw ShapeError(n.opType() + ": output_shape " + dm::dimsStr(want) + " must keep N and C of X " + shapeStr(x));
  }
  for (size_t i = 2; i < want.size(); ++i) {
    if (want[i] < inferred[i]) {
      throw ShapeError(n.opType() + ": output_shape " + dm::dimsStr(want) + " is smaller than the unpooled size " +
                       shapeStr(inferred));
    }
  }
  return Shape(want.begin(), want.end());
}

void inferMaxUnpool(InferContext& ctx) {
  const Node& n = ctx.node();
  scatter::checkIndexDType(n, ctx.inputDType(1), "I");
  if (ctx.inputShape(1) != ctx.inputShape(0)) {
    throw ShapeError(n.opType() + ": indices " + shapeStr(ctx.inputShape(1)) + " must have the shape of X " +
                     shapeStr(ctx.inputShape(0)));
  }
  const Tensor* os = ctx.hasInput(2) ? &ctx.requireConstInput(2, "MaxUnpool output_shape") : nullptr;
  ctx.setOutput(0, ctx.inputDType(0), maxUnpoolShape(n, ctx.inputShape(0), os));
}

class MaxUnpoolKernel : public Kernel {
 public:
  explicit MaxUnpoolKernel(const KernelContext& ctx) : label_(nodeLabel(ctx.node)) {
    elem_ = dtypeSize(ctx.input_types[0].dtype);
    in_count_ = scatter::numelOf(ctx.input_types[0].shape);
    out_count_ = scatter::numelOf(ctx.output_types[0].shape);
    idx64_ = ctx.input_types[1].dtype == DType::Int64;
  }
  void run(const KernelIO& io) const override {
    const auto* x = static_cast<const unsigned char*>(io.inputs[0].data);
    auto* y = static_cast<unsigned char*>(io.outputs[0].data);
    const IndexReader idx{io.inputs[1].data, idx64_};
    std::memset(y, 0, static_cast<size_t>(out_count_) * elem_);  // all-zero bytes are 0 in every dtype
    for (int64_t i = 0; i < in_count_; ++i) {
      const int64_t p = idx[i];
      if (p < 0 || p >= out_count_) {
        throw InputError(label_ + ": index " + std::to_string(p) + " (element " + std::to_string(i) +
                         " of I) is outside the output's " + std::to_string(out_count_) + " elements");
      }
      std::memcpy(y + p * static_cast<int64_t>(elem_), x + i * static_cast<int64_t>(elem_), elem_);
    }
  }

 private:
  std::string label_;
  size_t elem_ = 0;
  int64_t in_count_ = 0, out_count_ = 0;
  bool idx64_ = true;
};

}  // namespace

void registerScatterReorderOps(OpRegistry& reg) {
  // Every output element is an input element: the int8 output keeps the input's parameters.
  reg.add("ReverseSequence")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .cpuOnly("how much of each sequence it reverses comes from sequence_lens data at run time")
      .inputs(2)
      .infer(dm::namedInfer(inferReverseSequence))
      .kernel(dm::namedKernel(dm::kernelOf<ReverseSequenceKernel>()))
      .types(dm::allStorableTypes())
      .since(10)
      .doc("reverses the first sequence_lens[b] steps of each batch along time_axis");
  // Input elements or zeros: zero quantizes exactly to the zero point, so the int8 output keeps
  // X's parameters (the rule zero-constant Pad follows).
  reg.add("MaxUnpool")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::DataMovement)
      .cpuOnly("the positions it writes come from MaxPool's index output at run time")
      .inputs(2, 3)
      .infer(dm::namedInfer(inferMaxUnpool))
      .kernel(dm::namedKernel(dm::kernelOf<MaxUnpoolKernel>()))
      .types(dm::allStorableTypes())
      .since(11)
      .doc("writes X at the flat positions of MaxPool's indices, zeros elsewhere (output_shape optional)");
}

}  // namespace npuc
