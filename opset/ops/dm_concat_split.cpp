// Concat and Split: both view every tensor as [outer, axis * inner] rows and move one row
// chunk per (outer index, tensor) with memcpy.
#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

// Split has a variable output count; the schema needs an upper bound, and no real model comes
// near this one.
constexpr int kMaxSplitOutputs = 1 << 16;

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// ---------------------------------------------------------------- Concat

void inferConcat(InferContext& ctx) {
  const Shape& first = ctx.inputShape(0);
  const DType dtype = ctx.inputDType(0);
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) throw ShapeError("Concat inputs must have rank >= 1, input 0 is a scalar");
  const size_t axis = static_cast<size_t>(normalizeAxis(ctx.attrs().i("axis"), rank, "Concat axis"));
  Shape out = first;
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const Shape& s = ctx.inputShape(i);
    if (ctx.inputDType(i) != dtype) {
      throw ShapeError("Concat input " + std::to_string(i) + " is " + dtypeName(ctx.inputDType(i)) +
                       " but input 0 is " + dtypeName(dtype));
    }
    if (s.size() != first.size()) {
      throw ShapeError("Concat inputs 0 and " + std::to_string(i) + " differ in rank: " + shapeStr(first) +
                       " vs " + shapeStr(s));
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (d != axis && s[d] != first[d]) {
        throw ShapeError("Concat inputs 0 and " + std::to_string(i) + " differ on axis " + std::to_string(d) +
                         ": " + std::to_string(first[d]) + " vs " + std::to_string(s[d]));
      }
    }
    out[axis] += s[axis];
  }
  ctx.setOutput(0, dtype, out);
}

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const KernelContext& ctx) {
    const Shape& out = ctx.output_types[0].shape;
    const size_t axis = static_cast<size_t>(
        normalizeAxis(ctx.node.attrs().i("axis"), static_cast<int64_t>(out.size()), "axis"));
    const size_t elem = dtypeSize(ctx.output_types[0].dtype);
    outer_ = product(out, 0, axis);
    for (const TensorView& in : ctx.input_types) {
      chunk_bytes_.push_back(static_cast<size_t>(product(in.shape, axis, in.shape.size())) * elem);
    }
  }
  void run(const KernelIO& io) const override {
    unsigned char* dst = static_cast<unsigned char*>(io.outputs[0].data);
    for (int64_t o = 0; o < outer_; ++o) {
      for (size_t i = 0; i < chunk_bytes_.size(); ++i) {
        const size_t n = chunk_bytes_[i];
        if (n == 0) continue;
        std::memcpy(dst, static_cast<const unsigned char*>(io.inputs[i].data) + o * static_cast<int64_t>(n),
                    n);
        dst += n;
      }
    }
  }

 private:
  int64_t outer_ = 1;
  std::vector<size_t> chunk_bytes_;  // per input: bytes of one outer row
};

// ---------------------------------------------------------------- Split

// Sizes of the pieces along the axis: the `split` input, else the opset-18 num_outputs rule
// (ceil-sized pieces, the last one smaller), else equal pieces, one per output.
std::vector<int64_t> splitSizes(const Node& node, const Tensor* split, int64_t dim, size_t n_out) {
  std::vector<int64_t> sizes;
  if (split) {
    sizes = dm::intValues(*split, "Split split");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) throw ShapeError("split " + dm::dimsStr(sizes) + " has a negative size");
      sum += s;
    }
    if (sizes.size() != n_out) {
      throw ShapeError("split " + dm::dimsStr(sizes) + " has " + std::to_string(sizes.size()) +
                       " entries for " + std::to_string(n_out) + " outputs");
    }
    if (sum != dim) {
      throw ShapeError("split " + dm::dimsStr(sizes) + " sums to " + std::to_string(sum) + ", the axis has " +
                       std::to_string(dim));
    }
    return sizes;
  }
  const int64_t n = static_cast<int64_t>(n_out);
  if (node.attrs().has("num_outputs")) {
    if (node.attrs().i("num_outputs") != n) {
      throw ShapeError("num_outputs=" + std::to_string(node.attrs().i("num_outputs")) + " but the node has " +
                       std::to_string(n) + " outputs");
    }
    const int64_t piece = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(piece, dim - piece * i)));
    return sizes;
  }
  if (dim % n != 0) {
    throw ShapeError("axis of size " + std::to_string(dim) + " cannot be split into " + std::to_string(n) +
                     " equal parts");
  }
  return std::vector<int64_t>(n_out, dim / n);
}

void inferSplit(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const size_t axis = static_cast<size_t>(
      normalizeAxis(ctx.attrs().i("axis", 0), static_cast<int64_t>(in.size()), "Split axis"));
  const Tensor* split = ctx.hasInput(1) ? &ctx.requireConstInput(1, "Split split") : nullptr;
  const auto sizes = splitSizes(ctx.node(), split, in[axis], ctx.numOutputs());
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape out = in;
    out[axis] = sizes[i];
    ctx.setOutput(i, ctx.inputDType(0), out);
  }
}

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types[0].shape;
    const size_t axis = static_cast<size_t>(
        normalizeAxis(ctx.node.attrs().i("axis", 0), static_cast<int64_t>(in.size()), "axis"));
    const size_t elem = dtypeSize(ctx.input_types[0].dtype);
    outer_ = product(in, 0, axis);
    for (const TensorView& out : ctx.output_types) {
      chunk_bytes_.push_back(static_cast<size_t>(product(out.shape, axis, out.shape.size())) * elem);
    }
  }
  void run(const KernelIO& io) const override {
    const unsigned char* src = static_cast<const unsigned char*>(io.inputs[0].data);
    for (int64_t o = 0; o < outer_; ++o) {
      for (size_t i = 0; i < chunk_bytes_.size(); ++i) {
        const size_t n = chunk_bytes_[i];
        if (n == 0) continue;
        std::memcpy(static_cast<unsigned char*>(io.outputs[i].data) + o * static_cast<int64_t>(n), src, n);
        src += n;
      }
    }
  }

 private:
  int64_t outer_ = 1;
  std::vector<size_t> chunk_bytes_;  // per output: bytes of one outer row
};

}  // namespace

void registerDmConcatSplitOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Concat")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::Concat)
      .inputs(1, -1)
      .infer(dm::namedInfer(inferConcat))
      .kernel(dm::namedKernel(dm::kernelOf<ConcatKernel>()))
      .types(any)
      .doc("joins inputs along an axis");
  reg.add("Split")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(1, 2)
      .outputs(1, kMaxSplitOutputs)
      .infer(dm::namedInfer(inferSplit))
      .kernel(dm::namedKernel(dm::kernelOf<SplitKernel>()))
      .types(any)
      .doc("splits along an axis by the split input, num_outputs, or equally");
}

}  // namespace npuc
