#include "quant/graph/calibrator.h"

#include <chrono>

#include "common/error.h"
#include "runtime/executor.h"

namespace npuc::quant {

std::unique_ptr<Graph> exposeActivations(const Graph& graph) {
  std::unique_ptr<Graph> g = graph.clone();
  for (Node* n : g->nodes()) {
    for (Value* v : n->outputs()) {
      if (v && v->dtype() == DType::Float32 && !v->isGraphOutput()) g->addOutput(v);
    }
  }
  return g;
}

Calibrator::Calibrator(const Graph& graph) {
  std::unique_ptr<Graph> exposed = exposeActivations(graph);
  for (size_t i = 0; i < exposed->inputs().size(); ++i) {
    const Value* in = exposed->inputs()[i];
    if (in->dtype() != DType::Float32) continue;
    float_inputs_.push_back(static_cast<int64_t>(i));
    input_names_.push_back(in->name());
  }
  for (const Value* out : exposed->outputs()) output_names_.push_back(out->name());
  // Host fusion only changes speed, but keeping the graph as given makes every exposed value a
  // plain node output of the compiled graph.
  ExecutorOptions options;
  options.host_fusion = false;
  executor_ = std::make_unique<Executor>(*exposed, options);
}

Calibrator::~Calibrator() = default;

namespace {
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

void Calibrator::addSample(const std::vector<Tensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = executor_->run(inputs);
  const auto forward_done = std::chrono::steady_clock::now();
  timings_.forward_s += std::chrono::duration<double>(forward_done - start).count();
  for (size_t k = 0; k < float_inputs_.size(); ++k) {
    const Tensor& t = inputs[static_cast<size_t>(float_inputs_[k])];
    histograms_[input_names_[k]].addSample(t.data<float>(), t.numel());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].dtype() != DType::Float32) continue;
    histograms_[output_names_[i]].addSample(outputs[i].data<float>(), outputs[i].numel());
  }
  timings_.statistics_s += secondsSince(forward_done);
  ++samples_;
}

std::map<std::string, ClipRange> Calibrator::ranges(const CalibrationOptions& options) const {
  if (samples_ == 0) throw ConfigError("calibration: no sample was added (the dataset is empty)");
  std::map<std::string, ClipRange> out;
  for (const auto& [name, h] : histograms_) {
    // A value that only ever held NaN/inf has no finite range; it is quantized around 0.
    out[name] = h.empty() ? ClipRange{} : calibrateRange(h, options, name);
  }
  return out;
}

}  // namespace npuc::quant
