// Steps that compute in floating point: non-float nodes (shape arithmetic) unchanged, and the
// FP16 path: inputs dequantized (INT8 mode) and rounded to half, the FP32 kernel, outputs rounded
// to half and, in INT8 mode, quantized with their planned parameters.
#include "opset/eval.h"
#include "quant/scheme_qparams.h"
#include "quant/sim/half_round.h"
#include "quant/sim/node_kernel.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

Tensor roundToHalf(const Tensor& t) {
  Tensor r = Tensor::uninitialized(DType::Float32, t.shape());  // every element written below
  roundFloatsToHalf(t.data<float>(), t.numel(), r.data<float>());
  return r;
}

SimValue quantizeFloat(const Tensor& t, QuantParams p, DType storage) {
  SimValue v;
  v.tensor = Tensor::uninitialized(storage, t.shape());  // the quantizer writes every element
  if (storage == DType::Int16) {
    quantizeTensorInt16(t.data<float>(), t.numel(), p, v.tensor.data<int16_t>());
  } else {
    quantizeTensor(t.data<float>(), t.numel(), p, v.tensor.data<int8_t>());
  }
  v.quantized = true;
  v.params = p;
  return v;
}

Tensor dequantize(const SimValue& v) {
  if (!v.quantized) return v.tensor;
  Tensor r = Tensor::uninitialized(DType::Float32, v.tensor.shape());  // every element written below
  if (v.tensor.dtype() == DType::Int16) {
    dequantizeTensorInt16(v.tensor.data<int16_t>(), v.tensor.numel(), v.params, r.data<float>());
    return r;
  }
  // dequantizeValue of each of the 256 bytes, then one lookup per element (the same floats).
  float by_byte[256];
  for (int q = -128; q <= 127; ++q)
    by_byte[static_cast<uint8_t>(q)] = dequantizeValue(static_cast<int8_t>(q), v.params);
  const int8_t* q = v.tensor.data<int8_t>();
  float* x = r.data<float>();
  for (int64_t i = 0, n = v.tensor.numel(); i < n; ++i) x[i] = by_byte[static_cast<uint8_t>(q[i])];
  return r;
}

namespace {

class PlainStep : public SimStep {
 public:
  explicit PlainStep(const StepContext& ctx)
      : SimStep(ctx.inputs, ctx.outputs), node_(ctx.node), kernel_(NodeKernel::tryBuild(ctx.node)) {}
  void run(SimSlots& slots) const override {
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < node_.numInputs(); ++i) ins.push_back(hasIn(i) ? &in(slots, i).tensor : nullptr);
    std::vector<Tensor> outs = runNode(kernel_.get(), node_, ins);
    for (size_t i = 0; i < numOut(); ++i) out(slots, i) = SimValue{std::move(outs[i]), false, {}};
  }

 private:
  const Node& node_;
  std::unique_ptr<NodeKernel> kernel_;
};

class Float16Step : public SimStep {
 public:
  explicit Float16Step(const StepContext& ctx)
      : SimStep(ctx.inputs, ctx.outputs),
        node_(ctx.node),
        kernel_(NodeKernel::tryBuild(ctx.node)),
        storage_(ctx.activationStorage()) {
    for (const Value* v : ctx.node.outputs()) {
      const bool q = ctx.plan && v && ctx.plan->has(v->name());
      quantize_output_.push_back(q);
      output_params_.push_back(q ? ctx.paramsOf(v) : QuantParams{});
    }
  }
  void run(SimSlots& slots) const override {
    std::vector<Tensor> halves;
    halves.reserve(node_.numInputs());
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < node_.numInputs(); ++i) {
      if (!hasIn(i)) {
        ins.push_back(nullptr);
        continue;
      }
      const SimValue& v = in(slots, i);
      const bool is_float = v.quantized || v.tensor.dtype() == DType::Float32;
      halves.push_back(is_float ? roundToHalf(dequantize(v)) : v.tensor);
      ins.push_back(&halves.back());
    }
    std::vector<Tensor> outs = runNode(kernel_.get(), node_, ins);
    for (size_t i = 0; i < numOut(); ++i) {
      if (outs[i].dtype() != DType::Float32) {
        out(slots, i) = SimValue{std::move(outs[i]), false, {}};
      } else if (quantize_output_[i]) {
        out(slots, i) = quantizeFloat(roundToHalf(outs[i]), output_params_[i], storage_);
      } else {
        out(slots, i) = SimValue{roundToHalf(outs[i]), false, {}};
      }
    }
  }

 private:
  const Node& node_;
  std::unique_ptr<NodeKernel> kernel_;
  DType storage_;
  std::vector<bool> quantize_output_;
  std::vector<QuantParams> output_params_;
};

}  // namespace

std::unique_ptr<SimStep> makePlainStep(const StepContext& ctx) {
  return std::make_unique<PlainStep>(ctx);
}
std::unique_ptr<SimStep> makeFloat16Step(const StepContext& ctx) {
  return std::make_unique<Float16Step>(ctx);
}

}  // namespace npuc::quant
