#include "quant/graph/calibrator.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>

#include "common/error.h"
#include "quant/graph/kernel_threads.h"
#include "quant/parallel_for.h"
#include "runtime/executor.h"
#include "runtime/run_memory.h"

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

Calibrator::Calibrator(const Graph& graph, int threads)
    : threads_(threads > 0 ? threads : defaultCalibrationThreads()) {
  std::unique_ptr<Graph> exposed = exposeActivations(graph);
  // Histograms in the order the tensors are first seen: float graph inputs, then float outputs.
  std::map<std::string, size_t> slot_of;
  const auto observe = [&](const std::string& name, Source source) {
    auto [it, added] = slot_of.emplace(name, observed_.size());
    if (added) observed_.push_back(Observed{&histograms_[name], {}});
    observed_[it->second].sources.push_back(source);
  };
  for (size_t i = 0; i < exposed->inputs().size(); ++i) {
    const Value* in = exposed->inputs()[i];
    if (in->dtype() == DType::Float32) observe(in->name(), Source{true, i});
  }
  // Host fusion only changes speed, but keeping the graph as given makes every exposed value a
  // plain node output of the compiled graph.
  ExecutorOptions options;
  options.host_fusion = false;
  executor_ = std::make_unique<Executor>(*exposed, options);
  const std::vector<IoInfo>& outs = executor_->outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].dtype == DType::Float32) observe(outs[i].name, Source{false, i});
    worker_bytes_ += tensorBufferBytes(outs[i].dtype, outs[i].shape);
  }
}

size_t Calibrator::workersFor(size_t samples) const {
  size_t workers = std::min(samples, static_cast<size_t>(threads_));
  // Worker 0's buffers are addSample's own; each further worker adds worker_bytes_.
  const std::optional<uint64_t> available = availableMemoryBytes();
  if (workers > 1 && available && worker_bytes_ > 0) {
    workers = std::min<uint64_t>(workers, 1 + *available / 2 / worker_bytes_);
  }
  return std::max<size_t>(workers, 1);
}

Calibrator::~Calibrator() = default;

namespace {
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

std::vector<Tensor>& Calibrator::outputBuffers(size_t worker) {
  if (outputs_.size() <= worker) outputs_.resize(worker + 1);
  std::vector<Tensor>& buffers = outputs_[worker];
  if (buffers.empty()) {
    // Uninitialized: the executor writes every element of every output.
    for (const IoInfo& o : executor_->outputs()) buffers.push_back(Tensor::uninitialized(o.dtype, o.shape));
  }
  return buffers;
}

void Calibrator::collect(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                         std::vector<ActivationHistogram>& sample_histograms, int stat_threads,
                         CalibrationTimings& t) const {
  const auto start = std::chrono::steady_clock::now();
  std::vector<TensorView> in_views(inputs.begin(), inputs.end());
  std::vector<TensorView> out_views(outputs.begin(), outputs.end());
  executor_->run(in_views, out_views);
  const auto forward_done = std::chrono::steady_clock::now();
  t.forward_s += std::chrono::duration<double>(forward_done - start).count();
  sample_histograms.assign(observed_.size(), ActivationHistogram{});
  parallelFor(observed_.size(), stat_threads, [&](size_t k) {
    for (const Source& s : observed_[k].sources) {
      const Tensor& v = s.is_input ? inputs[s.index] : outputs[s.index];
      sample_histograms[k].addSample(v.data<float>(), v.numel());
    }
  });
  t.statistics_s += secondsSince(forward_done);
}

void Calibrator::addSample(const std::vector<Tensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  // One sample: the FP32 kernels use the cores, then the tensors are folded in parallel.
  std::vector<ActivationHistogram> sample;
  collect(inputs, outputBuffers(0), sample, threads_, timings_);
  for (size_t k = 0; k < observed_.size(); ++k) observed_[k].histogram->merge(sample[k]);
  ++samples_;
  timings_.collect_s += secondsSince(start);
}

void Calibrator::addSamples(const std::vector<std::vector<Tensor>>& samples) {
  const size_t workers = workersFor(samples.size());
  if (workers <= 1) {
    for (const std::vector<Tensor>& inputs : samples) addSample(inputs);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (size_t w = 0; w < workers; ++w) outputBuffers(w);  // allocated here, not racing in workers
  std::vector<std::vector<ActivationHistogram>> per_sample(samples.size());
  std::vector<CalibrationTimings> worker_timings(workers);
  std::vector<std::exception_ptr> errors(workers);
  // Fresh threads, never the caller's: kernel thread counts are per thread and the caller's
  // must stay as the user set it.
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      try {
        useOneKernelThreadOnThisThread();
        for (size_t i = w; i < samples.size(); i += workers)
          collect(samples[i], outputs_[w], per_sample[i], 1, worker_timings[w]);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);  // nothing was merged: the statistics are unchanged
  for (size_t i = 0; i < samples.size(); ++i) {
    for (size_t k = 0; k < observed_.size(); ++k) observed_[k].histogram->merge(per_sample[i][k]);
    ++samples_;
  }
  for (const CalibrationTimings& t : worker_timings) {
    timings_.forward_s += t.forward_s;
    timings_.statistics_s += t.statistics_s;
  }
  timings_.collect_s += secondsSince(start);
}

std::map<std::string, ClipRange> Calibrator::ranges(const CalibrationOptions& options) const {
  if (samples_ == 0) throw ConfigError("calibration: no sample was added (the dataset is empty)");
  std::vector<std::pair<const std::string*, const ActivationHistogram*>> tensors;
  for (const auto& [name, h] : histograms_) tensors.emplace_back(&name, &h);
  // One range per task: each depends only on its own histogram.
  std::vector<ClipRange> found(tensors.size());
  parallelFor(tensors.size(), threads_, [&](size_t i) {
    const auto [name, h] = tensors[i];
    // A value that only ever held NaN/inf has no finite range; it is quantized around 0.
    found[i] = h->empty() ? ClipRange{} : calibrateRange(*h, options, *name);
  });
  std::map<std::string, ClipRange> out;
  for (size_t i = 0; i < tensors.size(); ++i) out.emplace(*tensors[i].first, found[i]);
  return out;
}

}  // namespace npuc::quant
