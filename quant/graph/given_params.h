// Parameters fixed by an imported QDQ model (QuantizerOptions::given, quant/graph/qdq_import.h):
// how they are matched to the graph being quantized and where the quantizer takes them.
//
// The optimizer runs between import and build. Policy (docs/qdq_import.md):
//   - entries are keyed by value name; a value a pass removed or renamed loses its entry;
//   - a constant a pass changed (BN folded into a Conv, ...) loses its entry: its float values are
//     compared with the file's integers times the given scales;
//   - weights must be symmetric with one scale per output channel (or per tensor, expanded);
//     others are requantized symmetric by npuc's rule and reported with the error, or refused
//     under `strict`;
//   - activations without an entry take the quantizer's usual rules (shared scale, fused clamp);
//     an activation left with neither an entry nor a calibrated range is refused by name.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quantizer.h"

namespace npuc::quant {

struct GivenFit {
  std::map<std::string, TensorQuant> given;  // the entries the quantizer may take
  std::vector<std::string> notes;            // one line per entry dropped or changed, with why
  int64_t kept = 0, rekeyed = 0, dropped_missing = 0, dropped_changed = 0, requantized = 0;
  // Bias integers the build does not reproduce bit for bit (reported in notes).
  int64_t inexact_biases = 0;
  // Biases whose float constant would not give back the file's integers (beyond 2^24), exact
  // because the entry carries them (TensorQuant::given_values).
  int64_t bias_integers_needed = 0;
};

// Matches `given` (and the file's integers) to `graph` (separateSharedParameters done), `source`
// being the graph the entries were keyed on (before the optimizer). Throws ConfigError naming the
// tensor and the error when `strict` and a weight cannot be kept exactly.
//
// An activation a fusion renamed (Split + Sigmoid + Mul fused back into GLU gives the output a
// new name) is re-keyed through its readers: the value a surviving reader node (same name) reads
// at the same input index, or the graph output at the same position, takes the entry.
GivenFit fitGivenParameters(const Graph& graph, const Graph& source,
                            const std::map<std::string, TensorQuant>& given,
                            const std::map<std::string, Tensor>& integers, bool strict);

// For the quantizer: the given parameters of activation `value`, else of `range_of` (the value
// whose range it takes: a fused clamp's output), else null.
const TensorQuant* givenActivation(const QuantizerOptions& options, const std::string& value,
                                   const std::string& range_of);
// The given per-output-channel scales of MAC node `n`'s weight, if any.
std::optional<std::vector<float>> givenWeightScales(const QuantizerOptions& options, const Node& n);

// The integers an imported file fixed for bias `bias` (TensorQuant::given_values), when the
// plan's bias scales `scales` (s_in * s_w[c]) are the file's; else empty, with a line in
// `warnings` saying why they were not used.
std::vector<int64_t> givenBiasIntegers(const QuantizerOptions& options, const std::string& bias,
                                       const std::vector<float>& scales, std::vector<std::string>& warnings);

// After buildQuantPlan: how many given biases carry integers the plan did not take (givenBiasIntegers
// said why in the plan's warnings).
int64_t givenBiasesNotUsed(const QuantPlan& plan, const std::map<std::string, TensorQuant>& given);

// After buildQuantPlan: one line per given activation whose parameters the plan replaced (a
// shared-scale rule: the output of a Reshape, MaxPool, ... keeps its input's parameters).
std::vector<std::string> givenNotKept(const QuantPlan& plan, const std::map<std::string, TensorQuant>& given);

}  // namespace npuc::quant
