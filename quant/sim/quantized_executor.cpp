#include "quant/sim/quantized_executor.h"

#include <sstream>
#include <unordered_map>

#include "common/error.h"
#include "opset/bounded_output.h"
#include "quant/graph/op_quant_class.h"
#include "quant/graph/scheme_kernels.h"

namespace npuc::quant {

namespace {

using StepFactory = std::unique_ptr<SimStep> (*)(const StepContext&);

StepFactory int8Factory(QuantOpKind kind) {
  switch (kind) {
    case QuantOpKind::Conv: return makeConvStep;
    case QuantOpKind::Gemm:
    case QuantOpKind::MatMulConst: return makeLinearStep;
    case QuantOpKind::MatMulActivation: return makeBatchMatMulStep;
    case QuantOpKind::Add: return makeAddStep;
    case QuantOpKind::Mul: return makeMulStep;
    case QuantOpKind::Concat: return makeConcatStep;
    case QuantOpKind::SharedScale: return makeSharedScaleStep;
    case QuantOpKind::ClampActivation: return makeClampStep;
    case QuantOpKind::GlobalAveragePool: return makeGlobalAveragePoolStep;
    case QuantOpKind::AveragePool: return makeAveragePoolStep;
    case QuantOpKind::Lut: return makeLutStep;
    case QuantOpKind::NonFloat: return makePlainStep;
    case QuantOpKind::Float16: return makeFloat16Step;
  }
  return makeFloat16Step;
}

// The a16 dtypes: the wide kernels (quant/sim/wide_mac.h); kinds without one are FP16 in the
// plan (scheme_kernels.h) and never reach this table.
StepFactory wideFactory(QuantOpKind kind) {
  switch (kind) {
    case QuantOpKind::Conv: return makeWideConvStep;
    case QuantOpKind::Gemm:
    case QuantOpKind::MatMulConst: return makeWideLinearStep;
    case QuantOpKind::MatMulActivation: return makeWideBatchMatMulStep;
    case QuantOpKind::SharedScale: return makeWideSharedScaleStep;
    case QuantOpKind::ClampActivation: return makeClampStep;
    case QuantOpKind::Add: return makeWideAddStep;
    case QuantOpKind::Mul: return makeWideMulStep;
    case QuantOpKind::Concat: return makeWideConcatStep;
    case QuantOpKind::GlobalAveragePool: return makeGlobalAveragePoolStep;  // int16 by activationStorage()
    case QuantOpKind::NonFloat: return makePlainStep;
    default: return makeFloat16Step;
  }
}

// The constant weight of a MAC op (Conv, ConvTranspose, Gemm, MatMul input 1): what the NPU holds
// in its compute type, and what those ops' kernels read from the node itself (constInput) when
// they are built, rather than from the step's rounded input.
bool isMacWeight(const Node& n, size_t input) {
  const std::string& op = n.opType();
  return input == 1 && (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul");
}

}  // namespace

QuantizedExecutor::QuantizedExecutor(const Graph& graph, const QuantPlan& plan, SimOptions options)
    : graph_(graph.clone()), plan_(plan), options_(options) {
  compile();
}

QuantizedExecutor::QuantizedExecutor(const Graph& graph) : graph_(graph.clone()) {
  options_.mode = SimMode::Float16;
  compile();
}

QuantizedExecutor::~QuantizedExecutor() = default;

void QuantizedExecutor::compile() {
  checkBoundedOutputs(*graph_);  // a data-dependent size may only reach a graph output
  const bool int8 = options_.mode == SimMode::Int8;
  // FP16 mode builds its steps on a clone whose MAC weights are the half-rounded slot tensors, so
  // the kernels compute with the weights the NPU holds (and an FP16 blob stores), while graph()
  // keeps the FP32 weights for the accuracy analysis' golden run. (Before, those kernels read the
  // FP32 weights from the node and only the other inputs were rounded.)
  if (!int8) step_graph_ = graph_->clone();
  Graph& g = step_graph_ ? *step_graph_ : *graph_;
  std::unordered_map<const Value*, int> slot_of;
  auto slotFor = [&](const Value* v) {
    auto it = slot_of.find(v);
    if (it != slot_of.end()) return it->second;
    const int id = static_cast<int>(initial_.size());
    slot_of[v] = id;
    SimValue sv;
    if (v->isConstant()) {
      const bool round = !int8 && v->dtype() == DType::Float32;  // FP16 mode: weights in half
      sv.tensor = round ? roundToHalf(v->constant()) : v->constant();
    }
    initial_.push_back(std::move(sv));
    return id;
  };
  for (const Value* v : g.inputs()) {
    input_slots_.push_back(slotFor(v));
    if (v->dtype() == DType::Float32) float_values_.emplace_back(v->name(), input_slots_.back());
  }

  for (Node* n : g.nodes()) {
    const QuantOpKind kind = classifyForInt8(*n);
    const bool as_int8 =
        int8 && kind != QuantOpKind::NonFloat && plan_.precisionOf(n->name()) == NodePrecision::Int8;
    StepContext ctx{*n, {}, {}, int8 ? &plan_ : nullptr, options_.path};
    StepFloatValues float_values;
    for (size_t i = 0; i < n->numInputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) {
        ctx.inputs.push_back(-1);
        continue;
      }
      int slot = slotFor(v);
      if (!int8 && v->isConstant() && v->dtype() == DType::Float32 && isMacWeight(*n, i))
        n->input(i)->setConstant(initial_[static_cast<size_t>(slot)].tensor);  // shares the rounded tensor
      if (!v->isConstant() && v->dtype() == DType::Float32) float_values.inputs.emplace_back(v, slot);
      if (as_int8 && v->isConstant() && v->dtype() == DType::Float32 && readsAsActivation(kind, i)) {
        // A float constant read as an activation (Mul by a constant, ...): its own int8 copy.
        slot = static_cast<int>(initial_.size());
        initial_.push_back(quantizeFloat(v->constant(), ctx.paramsOf(v), ctx.activationStorage()));
      }
      ctx.inputs.push_back(slot);
    }
    for (const Value* v : n->outputs()) {
      ctx.outputs.push_back(slotFor(v));
      if (v->dtype() == DType::Float32) {
        float_values_.emplace_back(v->name(), ctx.outputs.back());
        float_values.outputs.emplace_back(v, ctx.outputs.back());
      }
    }
    const QuantOpKind effective =
        as_int8 ? kind : (kind == QuantOpKind::NonFloat ? kind : QuantOpKind::Float16);
    const bool wide = int8 && plan_.scheme.activation_bits == 16;
    steps_.push_back((wide ? wideFactory(effective) : int8Factory(effective))(ctx));
    step_float_values_.push_back(std::move(float_values));
    step_kinds_.push_back(n->name() + ": " + n->opType() + " -> " +
                          (effective == QuantOpKind::Float16 || effective == QuantOpKind::NonFloat
                               ? std::string(quantOpKindName(effective))
                               : std::string(wide ? "int16 " : "int8 ") + quantOpKindName(effective)));
  }
  for (const Value* v : g.outputs()) output_slots_.push_back(slotFor(v));
  for (const auto& [v, slot] : slot_of) slot_by_name_[v->name()] = slot;

  for (const Value* v : graph_->inputs()) footprint_.addTensor("input", v->name(), simDType(*v), v->shape());
  for (const Node* n : graph_->nodes()) {
    for (const Value* v : n->outputs()) footprint_.addTensor("value", v->name(), simDType(*v), v->shape());
  }
  for (const Value* v : graph_->outputs())
    footprint_.addTensor("output", v->name(), DType::Float32, v->shape());
}

int QuantizedExecutor::slotOf(const std::string& value) const {
  auto it = slot_by_name_.find(value);
  return it == slot_by_name_.end() ? -1 : it->second;
}

SimValue QuantizedExecutor::inputToSim(size_t index, const Tensor& t) const {
  const Value* v = graph_->inputs().at(index);
  return v->dtype() == DType::Float32 ? toSimFloat(*v, t) : SimValue{t, false, {}};
}

void QuantizedExecutor::checkInputs(const std::vector<Tensor>& inputs) const {
  const auto& declared = graph_->inputs();
  if (inputs.size() != declared.size()) {
    throw InputError("the model has " + std::to_string(declared.size()) + " input(s), got " +
                     std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = declared[i];
    if (inputs[i].dtype() != v->dtype() || inputs[i].shape() != v->shape()) {
      throw InputError("input '" + v->name() + "' expects " + dtypeName(v->dtype()) + shapeStr(v->shape()) +
                       ", got " + dtypeName(inputs[i].dtype()) + shapeStr(inputs[i].shape()));
    }
  }
}

DType QuantizedExecutor::simDType(const Value& v) const {
  const bool quantized = options_.mode == SimMode::Int8 && v.dtype() == DType::Float32 && plan_.has(v.name());
  if (!quantized) return v.dtype();
  return plan_.scheme.activation_bits == 16 ? DType::Int16 : DType::Int8;
}

std::vector<Tensor> QuantizedExecutor::run(const std::vector<Tensor>& inputs,
                                           const RunMemoryLimits& limits) const {
  checkInputs(inputs);  // a wrong input is reported as such, not as a size problem
  footprint_.check(limits, /*pool_has_idle=*/false);
  const SimSlots slots = execute(inputs);
  std::vector<Tensor> outputs;
  for (int slot : output_slots_) outputs.push_back(dequantize(slots[static_cast<size_t>(slot)]));
  trimBoundedOutputs(*graph_, outputs);  // bounded outputs (NMS, NonZero) at their actual extent
  return outputs;
}

std::map<std::string, Tensor> QuantizedExecutor::runAllValues(const std::vector<Tensor>& inputs) const {
  const SimSlots slots = execute(inputs);
  std::map<std::string, Tensor> values;
  for (const auto& [name, slot] : float_values_) values[name] = dequantize(slots[static_cast<size_t>(slot)]);
  return values;
}

SimSlots QuantizedExecutor::execute(const std::vector<Tensor>& inputs) const {
  checkInputs(inputs);
  SimSlots slots = initial_;  // shallow: constant tensors share storage
  for (size_t i = 0; i < inputs.size(); ++i) {
    slots[static_cast<size_t>(input_slots_[i])] = inputToSim(i, inputs[i]);
  }
  for (const auto& step : steps_) step->run(slots);
  return slots;
}

SimValue QuantizedExecutor::toSimFloat(const Value& v, const Tensor& t) const {
  if (options_.mode == SimMode::Int8 && plan_.has(v.name())) {
    return quantizeFloat(t, plan_.at(v.name()).params(v.name()),
                         plan_.scheme.activation_bits == 16 ? DType::Int16 : DType::Int8);
  }
  return SimValue{roundToHalf(t), false, {}};
}

std::map<std::string, Tensor> QuantizedExecutor::runEachNodeIsolated(
    const std::vector<Tensor>& inputs, const std::map<std::string, Tensor>& golden,
    const std::function<void(size_t)>& after_step) const {
  checkInputs(inputs);
  SimSlots slots = initial_;
  for (size_t i = 0; i < inputs.size(); ++i) {  // non-float inputs feed shape computations
    slots[static_cast<size_t>(input_slots_[i])] = SimValue{inputs[i], false, {}};
  }
  std::map<std::string, Tensor> outputs;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const StepFloatValues& values = step_float_values_[k];
    for (const auto& [v, slot] : values.inputs) {
      auto it = golden.find(v->name());
      if (it == golden.end()) {
        throw InputError("isolated run: no FP32 value of '" + v->name() + "' (read by " + step_kinds_[k] +
                         ")");
      }
      slots[static_cast<size_t>(slot)] = toSimFloat(*v, it->second);
    }
    steps_[k]->run(slots);
    // Collected now: a later step reading this value overwrites its slot with the golden one.
    for (const auto& [v, slot] : values.outputs)
      outputs[v->name()] = dequantize(slots[static_cast<size_t>(slot)]);
    if (after_step) after_step(k);
  }
  return outputs;
}

std::string QuantizedExecutor::describe() const {
  std::ostringstream os;
  for (const std::string& s : step_kinds_) os << s << "\n";
  return os.str();
}

}  // namespace npuc::quant
