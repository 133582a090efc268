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
};

// A clone of `graph` whose every float node output is also a graph output (the original
// outputs first, in place), so one FP32 run shows every activation.
std::unique_ptr<Graph> exposeActivations(const Graph& graph);

class Calibrator {
 public:
  // Compiles a copy of `graph` whose every float intermediate value is also an output.
  explicit Calibrator(const Graph& graph);
  ~Calibrator();

  // Runs one sample (one tensor per graph input, in order) and folds its activations into the
  // statistics. Throws InputError naming the input on a count/shape/dtype mismatch.
  void addSample(const std::vector<Tensor>& inputs);
  int64_t numSamples() const { return samples_; }
  const CalibrationTimings& timings() const { return timings_; }

  // Statistics per value name (graph inputs and node outputs of float type).
  const std::map<std::string, ActivationHistogram>& histograms() const { return histograms_; }
  // Clip range of every observed value with `options`. Throws ConfigError if no sample was added.
  std::map<std::string, ClipRange> ranges(const CalibrationOptions& options) const;

 private:
  std::unique_ptr<Executor> executor_;
  std::vector<std::string> input_names_;   // float graph inputs observed, by input index
  std::vector<int64_t> float_inputs_;      // their indices in the input list
  std::vector<std::string> output_names_;  // executor outputs, in order
  std::map<std::string, ActivationHistogram> histograms_;
  int64_t samples_ = 0;
  CalibrationTimings timings_;
};

}  // namespace npuc::quant
