// Activation calibration: runs the FP32 model on calibration samples and streams every float
// activation (graph inputs and node outputs) into an ActivationHistogram. Only the histograms
// are kept, so memory does not depend on the number of samples; ranges are chosen at the end
// with the configured algorithm (quant/calibrate.h).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/calibrate.h"
#include "quant/histogram.h"

namespace npuc {
class Executor;
}

namespace npuc::quant {

// Wall seconds a Calibrator spent per stage, summed over its samples (profiling only: reading
// the clock twice per stage and sample costs nothing next to a forward pass).
struct CalibrationTimings {
  double forward_s = 0.0;     // FP32 executor runs
  double statistics_s = 0.0;  // folding activations into the histograms (min/max and bins)
  // forward_s and statistics_s are summed over the worker threads (thread-seconds); collect_s is
  // the wall time of addSample / addSamples, both stages and all workers together.
  double collect_s = 0.0;
};

// A clone of `graph` whose every float node output is also a graph output (the original
// outputs first, in place), so one FP32 run shows every activation.
std::unique_ptr<Graph> exposeActivations(const Graph& graph);

class Calibrator {
 public:
  // Compiles a copy of `graph` whose every float intermediate value is also an output. `threads`
  // (0: one per core) run the samples of addSamples, fold a lone sample's activations and search
  // the ranges in parallel. Results are the same bits for any thread count: a worker builds each
  // sample's own histograms, which are merged into the totals in sample order (merge(
  // fromSample(x)) equals addSample(x), histogram.h), and each range depends on one histogram.
  explicit Calibrator(const Graph& graph, int threads = 0);
  ~Calibrator();

  // Runs one sample (one tensor per graph input, in order) and folds its activations into the
  // statistics. Throws InputError naming the input on a count/shape/dtype mismatch. The outputs
  // are written into buffers allocated once and reused by every sample.
  void addSample(const std::vector<Tensor>& inputs);
  // The same as addSample on each sample in order, with up to threads() samples run at once
  // (each worker gives its kernels one thread: kernel_threads.h). Holds one set of output
  // buffers per worker, so workers beyond the first are started only while their buffers fit in
  // half the memory the machine has available (a many-core machine would otherwise hold one copy
  // of every activation per core); the statistics do not depend on the worker count.
  void addSamples(const std::vector<std::vector<Tensor>>& samples);
  int threads() const { return threads_; }
  int64_t numSamples() const { return samples_; }
  const CalibrationTimings& timings() const { return timings_; }

  // Statistics per value name (graph inputs and node outputs of float type).
  const std::map<std::string, ActivationHistogram>& histograms() const { return histograms_; }
  // Clip range of every observed value with `options`. Throws ConfigError if no sample was added.
  std::map<std::string, ClipRange> ranges(const CalibrationOptions& options) const;

 private:
  // Where one observed tensor of a sample comes from: a graph input or an executor output.
  struct Source {
    bool is_input;
    size_t index;
  };
  // One histogram and the tensors folded into it per sample, in the order the serial loop used
  // (a name listed twice is folded twice); one parallel task each.
  struct Observed {
    ActivationHistogram* histogram;
    std::vector<Source> sources;
  };

  // Output buffers of one worker (allocated on first use, reused by every later sample).
  std::vector<Tensor>& outputBuffers(size_t worker);
  // Runs one sample into `outputs` and folds it into one histogram per observed slot
  // (`sample_histograms`, empty on entry), with `stat_threads` folding threads.
  void collect(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
               std::vector<ActivationHistogram>& sample_histograms, int stat_threads,
               CalibrationTimings& t) const;

  std::unique_ptr<Executor> executor_;
  // How many workers addSamples starts for `samples` samples (at least 1).
  size_t workersFor(size_t samples) const;

  int threads_;
  uint64_t worker_bytes_ = 0;                 // one worker's output buffers
  std::vector<std::vector<Tensor>> outputs_;  // per worker
  std::vector<Observed> observed_;
  std::map<std::string, ActivationHistogram> histograms_;
  int64_t samples_ = 0;
  CalibrationTimings timings_;
};

}  // namespace npuc::quant
