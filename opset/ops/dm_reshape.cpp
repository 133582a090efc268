// Ops that only reinterpret the shape of their input: Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout (inference). Their kernels are a copy the executor may elide by aliasing.
#include <algorithm>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

using dm::CopyKernel;

// Reshape: 0 copies the input dim at the same position (unless allowzero=1, when 0 means an
// empty dim), a single -1 is inferred from the element count.
Shape reshapeTarget(const Shape& in, const std::vector<int64_t>& spec, bool allow_zero) {
  Shape out(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allow_zero) {
      if (i >= in.size()) {
        throw ShapeError("shape " + dm::dimsStr(spec) + " copies dim " + std::to_string(i) +
                         " (0) but the input " + shapeStr(in) + " has rank " + std::to_string(in.size()));
      }
      d = in[i];
    }
    if (d == -1) {
      if (infer_at >= 0) throw ShapeError("shape " + dm::dimsStr(spec) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) throw ShapeError("shape " + dm::dimsStr(spec) + " has invalid dim " + std::to_string(d));
    out[i] = d;
    // Checked: a wrapped product could equal the input's element count and accept a bogus shape.
    if (__builtin_mul_overflow(known, d, &known)) {
      throw ShapeError("shape " + dm::dimsStr(spec) + " has more elements than int64 can count");
    }
  }
  const int64_t numel = shapeNumel(in);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      throw ShapeError("cannot reshape " + shapeStr(in) + " to " + dm::dimsStr(spec) +
                       ": -1 cannot be inferred from " + std::to_string(numel) + " elements");
    }
    out[static_cast<size_t>(infer_at)] = numel / known;
  } else if (known != numel) {
    throw ShapeError("cannot reshape " + shapeStr(in) + " (" + std::to_string(numel) + " elements) to " +
                     shapeStr(out));
  }
  return out;
}

void inferReshape(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const std::vector<int64_t> spec = dm::intValues(ctx.requireConstInput(1, "Reshape shape"), "Reshape shape");
  const bool allow_zero = ctx.attrs().i("allowzero", 0) != 0;
  if (allow_zero && std::count(spec.begin(), spec.end(), 0) && std::count(spec.begin(), spec.end(), -1)) {
    throw ShapeError("shape " + dm::dimsStr(spec) + " has both 0 and -1, which allowzero=1 forbids");
  }
  ctx.setOutput(0, ctx.inputDType(0), reshapeTarget(in, spec, allow_zero));
}

void inferFlatten(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attrs().i("axis", 1);
  if (axis < -rank || axis > rank) {
    throw ShapeError("Flatten axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  int64_t inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[static_cast<size_t>(i)];
  ctx.setOutput(0, ctx.inputDType(0), {outer, inner});
}

void inferSqueeze(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (ctx.hasInput(1)) {
    const auto axes = dm::normalizedAxes(
        dm::intValues(ctx.requireConstInput(1, "Squeeze axes"), "Squeeze axes"), rank, "Squeeze axis");
    for (int64_t a : axes) {
      if (in[static_cast<size_t>(a)] != 1) {
        throw ShapeError("cannot squeeze axis " + std::to_string(a) + " of shape " + shapeStr(in) +
                         ": its size is " + std::to_string(in[static_cast<size_t>(a)]) + ", not 1");
      }
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  ctx.setOutput(0, ctx.inputDType(0), out);
}

void inferUnsqueeze(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const auto raw = dm::intValues(ctx.requireConstInput(1, "Unsqueeze axes"), "Unsqueeze axes");
  const int64_t out_rank = static_cast<int64_t>(in.size() + raw.size());
  const auto axes = dm::normalizedAxes(raw, out_rank, "Unsqueeze axis");
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  size_t next_in = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next_in++]);
  ctx.setOutput(0, ctx.inputDType(0), out);
}

// Dropout at inference is the identity; the optional mask output is all true.
void inferDropout(InferContext& ctx) {
  if (const Tensor* training = ctx.constInput(2)) {
    const Tensor* ratio = ctx.constInput(1);
    const bool zero_ratio = ratio && ratio->numel() == 1 && ratio->doubleAt(0) == 0.0;
    if (training->numel() == 1 && training->intAt(0) != 0 && !zero_ratio) {
      throw UnsupportedOpError(
          "Dropout with training_mode=true is not supported (npuc compiles for inference)");
    }
  }
  ctx.setOutput(0, ctx.inputDType(0), ctx.inputShape(0));
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DType::Bool, ctx.inputShape(0));
}

class DropoutKernel : public Kernel {
 public:
  explicit DropoutKernel(const KernelContext&) {}
  void run(const KernelIO& io) const override {
    // training_mode known only at run time: refuse rather than silently skip the dropout
    // (unless ratio is 0, where training-mode Dropout is the identity too).
    if (io.inputs.size() > 2 && io.inputs[2].present() && *io.inputs[2].as<const bool>() && !zeroRatio(io)) {
      throw UnsupportedOpError("Dropout with training_mode=true is not supported (npuc runs inference only)");
    }
    CopyKernel::copyInput0(io);
    if (io.outputs.size() > 1 && io.outputs[1].present()) {
      std::memset(io.outputs[1].data, 1, io.outputs[1].nbytes());  // bool true
    }
  }
  int aliasInput() const override { return 0; }

 private:
  static bool zeroRatio(const KernelIO& io) {
    const TensorView& ratio = io.inputs[1];
    return ratio.present() && ratio.dtype == DType::Float32 && *ratio.as<const float>() == 0.0f;
  }
};

}  // namespace

void registerDmReshapeOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Reshape")
      .traits(OpTrait::DataMovement | OpTrait::ShapeOnly)
      .quantClass(QuantClass::DataMovement)
      .inputs(2)
      .infer(dm::namedInfer(inferReshape))
      .kernel(dm::namedKernel(dm::kernelOf<CopyKernel>()))
      .types(any)
      .doc("reinterprets the shape (0 copies a dim unless allowzero=1, -1 is inferred)");
  reg.add("Flatten")
      .traits(OpTrait::DataMovement | OpTrait::ShapeOnly)
      .quantClass(QuantClass::DataMovement)
      .inputs(1)
      .infer(dm::namedInfer(inferFlatten))
      .kernel(dm::namedKernel(dm::kernelOf<CopyKernel>()))
      .types(any)
      .doc("reshapes to 2-D [prod(dims[:axis]), prod(dims[axis:])]");
  reg.add("Squeeze")
      .traits(OpTrait::DataMovement | OpTrait::ShapeOnly)
      .quantClass(QuantClass::DataMovement)
      .inputs(1, 2)
      .infer(dm::namedInfer(inferSqueeze))
      .kernel(dm::namedKernel(dm::kernelOf<CopyKernel>()))
      .types(any)
      .doc("removes size-1 dims (the listed axes, or all)");
  reg.add("Unsqueeze")
      .traits(OpTrait::DataMovement | OpTrait::ShapeOnly)
      .quantClass(QuantClass::DataMovement)
      .inputs(2)
      .infer(dm::namedInfer(inferUnsqueeze))
      .kernel(dm::namedKernel(dm::kernelOf<CopyKernel>()))
      .types(any)
      .doc("inserts size-1 dims at the listed output axes");
  reg.add("Identity")
      .traits(OpTrait::DataMovement | OpTrait::FiniteUnary)
      .quantClass(QuantClass::DataMovement)
      .inputs(1)
      .infer(dm::namedInfer(inferSameAsInput0))
      .kernel(dm::namedKernel(dm::kernelOf<CopyKernel>()))
      .types(any)
      .doc("copies its input");
  reg.add("Dropout")
      .quantClass(QuantClass::Float)
      .inputs(1, 3)
      .outputs(1, 2)
      .infer(dm::namedInfer(inferDropout))
      .kernel(dm::namedKernel(dm::kernelOf<DropoutKernel>()))
      .types(any)
      .doc("inference: identity; the optional mask is all true");
}

}  // namespace npuc
