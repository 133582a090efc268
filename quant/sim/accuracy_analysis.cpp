#include "quant/sim/accuracy_analysis.h"

#include <algorithm>
#include <map>

#include "quant/graph/calibrator.h"
#include "quant/graph/op_quant_class.h"
#include "runtime/executor.h"

namespace npuc::quant {

namespace {

LayerAccuracy compare(const std::string& name, const Tensor& fp32, const Tensor& simulated,
                      const Tensor& single) {
  LayerAccuracy row;
  row.value = name;
  row.metrics = compareOutputs(fp32.data<float>(), simulated.data<float>(), fp32.numel());
  row.single = compareOutputs(fp32.data<float>(), single.data<float>(), fp32.numel());
  return row;
}

// The Relu/Clip a node's output was fused into (the quantizer's fused-clamp rule): that value
// then holds the activation's output, so it is compared with the activation's FP32 output.
const Node* fusedClamp(const Node& producer, const QuantPlan& plan) {
  const Value* out = producer.output(0);
  if (!canFuseClamp(classifyForInt8(producer)) || plan.precisionOf(producer.name()) != NodePrecision::Int8 ||
      out->isGraphOutput() || out->uses().size() != 1 || out->uses()[0].index != 0) {
    return nullptr;
  }
  const Node* user = out->uses()[0].user;
  const bool int8_clamp = classifyForInt8(*user) == QuantOpKind::ClampActivation &&
                          plan.precisionOf(user->name()) == NodePrecision::Int8;
  return int8_clamp ? user : nullptr;
}

// True when the quantizer calibrates `v` by name (so a shared Concat grid applies to it): every
// producer except an int8 one that keeps its input's parameters (Slice, MaxPool, Relu, ...).
bool calibratedByName(const Value& v, const QuantPlan& plan) {
  const Node& producer = *v.producer();
  return plan.precisionOf(producer.name()) != NodePrecision::Int8 ||
         !keepsInputParams(classifyForInt8(producer));
}

// Values the quantizer put on the grid of a Concat's fused clamp (shareConcatScales: sole-reader
// inputs calibrated by name take the Concat's parameters, which are the clamp's): their int8
// values are already clamped, so they are compared with the clamp of their FP32 value.
std::map<std::string, const Node*> clampedConcatInputs(const Graph& graph, const QuantPlan& plan) {
  std::map<std::string, const Node*> out;
  for (const Node* n : graph.nodes()) {
    if (classifyForInt8(*n) != QuantOpKind::Concat) continue;
    const Node* clamp = fusedClamp(*n, plan);
    if (!clamp) continue;
    for (const Value* v : n->inputs()) {
      if (v && v->producer() && !v->isGraphOutput() && v->uses().size() == 1 &&
          v->dtype() == DType::Float32 && calibratedByName(*v, plan))
        out[v->name()] = clamp;
    }
  }
  return out;
}

Tensor clamped(const Tensor& x, const Node& clamp) {
  const ClampBounds b = clampBoundsOf(clamp);
  Tensor y = x.clone();
  float* d = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) d[i] = std::clamp(d[i], b.lo, b.hi);
  return y;
}

}  // namespace

std::vector<LayerAccuracy> analyzeAccuracy(const QuantizedExecutor& sim, const QuantPlan& plan,
                                           const std::vector<Tensor>& inputs, AccuracyTensors* tensors,
                                           const AccuracyProgress& progress) {
  const Graph& graph = sim.graph();
  const size_t steps = sim.numSteps();
  auto report = [&](size_t done) {
    if (progress) progress(done, 3 * steps);
  };
  std::unique_ptr<Graph> exposed = exposeActivations(graph);
  ExecutorOptions options;
  options.host_fusion = false;  // every exposed value stays a plain node output
  const std::vector<Tensor> fp32 = Executor(*exposed, options).run(inputs);
  report(steps);
  std::map<std::string, Tensor> reference;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    if (graph.inputs()[i]->dtype() == DType::Float32) reference[graph.inputs()[i]->name()] = inputs[i];
  }
  for (size_t i = 0; i < fp32.size(); ++i) {
    if (fp32[i].dtype() == DType::Float32) reference[exposed->outputs()[i]->name()] = fp32[i];
  }
  std::map<std::string, Tensor> simulated = sim.runAllValues(inputs);
  report(2 * steps);
  std::map<std::string, Tensor> single =
      sim.runEachNodeIsolated(inputs, reference, [&](size_t k) { report(2 * steps + k + 1); });

  // After the isolated runs, which read the unclamped FP32 values like the full model does.
  const std::map<std::string, const Node*> clamped_inputs =
      sim.mode() == SimMode::Int8 ? clampedConcatInputs(graph, plan) : std::map<std::string, const Node*>{};
  for (const auto& [name, clamp] : clamped_inputs) reference[name] = clamped(reference.at(name), *clamp);

  std::vector<LayerAccuracy> rows;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* v = graph.inputs()[i];
    if (v->dtype() != DType::Float32) continue;
    const Tensor& quantized = simulated.at(v->name());  // a graph input is its own isolated run
    rows.push_back(compare(v->name(), inputs[i], quantized, quantized));
    rows.back().precision = "input";
  }
  for (const Node* n : graph.nodes()) {
    for (const Value* v : n->outputs()) {
      if (!v || v->dtype() != DType::Float32) continue;
      const Node* clamp = sim.mode() == SimMode::Int8 ? fusedClamp(*n, plan) : nullptr;
      const std::string& compared_with = clamp ? clamp->output(0)->name() : v->name();
      rows.push_back(
          compare(v->name(), reference.at(compared_with), simulated.at(v->name()), single.at(v->name())));
      rows.back().node = n->name();
      rows.back().op_type = n->opType();
      rows.back().precision =
          sim.mode() == SimMode::Float16 ? "fp16" : nodePrecisionName(plan.precisionOf(n->name()));
      if (clamp) rows.back().precision += " (fused with " + clamp->name() + ")";
      if (auto it = clamped_inputs.find(v->name()); it != clamped_inputs.end())
        rows.back().precision += " (clamped by " + it->second->name() + " after the Concat)";
    }
  }
  if (tensors) *tensors = AccuracyTensors{std::move(reference), std::move(simulated), std::move(single)};
  return rows;
}

}  // namespace npuc::quant
