// Building blocks of the quantized simulator: the value a step reads or writes (an int8 tensor
// with its parameters, or a plain tensor for float/shape data), and the step interface. One step
// per graph node, compiled once; run() is const so one executor serves several threads.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "quant/qparams.h"

namespace npuc::quant {

// INT8 mode: float activations are int8 (`quantized`); FP16 mode: every float is IEEE-half
// rounded float32. Non-float tensors (shapes, indices) are plain in both.
struct SimValue {
  Tensor tensor;
  bool quantized = false;
  QuantParams params;
};

using SimSlots = std::vector<SimValue>;

enum class SimPath { Reference, Fast };

class SimStep {
 public:
  SimStep(std::vector<int> inputs, std::vector<int> outputs)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}
  virtual ~SimStep() = default;
  virtual void run(SimSlots& slots) const = 0;

 protected:
  const SimValue& in(const SimSlots& s, size_t i) const { return s[static_cast<size_t>(inputs_[i])]; }
  bool hasIn(size_t i) const { return i < inputs_.size() && inputs_[i] >= 0; }
  SimValue& out(SimSlots& s, size_t i) const { return s[static_cast<size_t>(outputs_[i])]; }
  size_t numOut() const { return outputs_.size(); }

 private:
  std::vector<int> inputs_;   // slot per node input, -1 for an omitted optional one
  std::vector<int> outputs_;  // slot per node output
};

// What a step factory is given: the node, its slots, the plan (INT8 mode) and the path.
struct StepContext {
  const Node& node;
  std::vector<int> inputs;
  std::vector<int> outputs;
  const QuantPlan* plan = nullptr;  // null in FP16 mode
  SimPath path = SimPath::Fast;

  QuantParams paramsOf(const Value* v) const { return plan->at(v->name()).params(v->name()); }
  // How quantized activations are stored: int8, or int16 for the a16 dtypes.
  DType activationStorage() const {
    return plan && plan->scheme.activation_bits == 16 ? DType::Int16 : DType::Int8;
  }
};

// ---- conversions shared by the steps
Tensor roundToHalf(const Tensor& t);  // float32 tensor with every element rounded to IEEE half
// `storage` Int8 (w8a8) or Int16 (the a16 dtypes): the activation width of the plan's scheme.
SimValue quantizeFloat(const Tensor& t, QuantParams p, DType storage = DType::Int8);
Tensor dequantize(const SimValue& v);  // quantized (int8 or int16) -> float32; plain float as is

// ---- step factories (one file per family)
std::unique_ptr<SimStep> makePlainStep(const StepContext& ctx);    // non-float nodes
std::unique_ptr<SimStep> makeFloat16Step(const StepContext& ctx);  // FP16 compute (both modes)
std::unique_ptr<SimStep> makeSharedScaleStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeConvStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeLinearStep(const StepContext& ctx);  // Gemm, MatMul with constant B
std::unique_ptr<SimStep> makeBatchMatMulStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeAddStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeMulStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeConcatStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeClampStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeGlobalAveragePoolStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeAveragePoolStep(const StepContext& ctx);
// MaxPool on int8 bytes (a SharedScale op); only when supportsInt8MaxPool, else the float path.
bool supportsInt8MaxPool(const Node& n);
std::unique_ptr<SimStep> makeMaxPoolStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeLutStep(const StepContext& ctx);
// The wide-accumulator dtypes (int16 activations; quant/sim/wide_mac.h, wide_steps.cpp).
std::unique_ptr<SimStep> makeWideConvStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeWideLinearStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeWideBatchMatMulStep(const StepContext& ctx);
// Data movement / MaxPool on int16 bytes: the generic dequantize -> move -> quantize step (exact).
std::unique_ptr<SimStep> makeWideSharedScaleStep(const StepContext& ctx);
// Add, Mul, Concat on int16 (quant/binary_requant_wide.h, wide_eltwise_steps.cpp); GlobalAveragePool
// on int16 is makeGlobalAveragePoolStep (one step templated on the storage).
std::unique_ptr<SimStep> makeWideAddStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeWideMulStep(const StepContext& ctx);
std::unique_ptr<SimStep> makeWideConcatStep(const StepContext& ctx);

}  // namespace npuc::quant
