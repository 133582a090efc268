// The bit-exact simulator of an INT8 (or FP16) model: the graph plus a QuantPlan compiled into
// one step per node (quant/sim/sim_step.h).
//
//   INT8 mode  float graph inputs are quantized with their planned parameters, int8 nodes run
//              integer kernels (int8 x int8 -> int32, one-rounding requantization), FP16 nodes
//              dequantize -> compute in IEEE half -> quantize, outputs are dequantized.
//   FP16 mode  no quantization: every float input, constant and op output is rounded to half.
//
// Conv and Gemm/MatMul have a reference loop and a fast path (SimPath) that agree to the bit.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

enum class SimMode { Int8, Float16 };

struct SimOptions {
  SimMode mode = SimMode::Int8;
  SimPath path = SimPath::Fast;
};

class QuantizedExecutor {
 public:
  // INT8 mode needs the plan built for this graph (buildQuantPlan); FP16 mode ignores it.
  QuantizedExecutor(const Graph& graph, const QuantPlan& plan, SimOptions options = {});
  // FP16 mode.
  explicit QuantizedExecutor(const Graph& graph);
  ~QuantizedExecutor();

  // One tensor per graph input, in order (float32 for float inputs). Returns the graph outputs,
  // dequantized to float32. Throws InputError naming the input on a count/dtype/shape mismatch.
  // Safe to call from several threads.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // Every float value of the run (graph inputs and node outputs), dequantized, by value name:
  // what the accuracy analysis compares layer by layer.
  std::map<std::string, Tensor> runAllValues(const std::vector<Tensor>& inputs) const;

  const Graph& graph() const { return *graph_; }
  SimMode mode() const { return options_.mode; }
  // Per node: "name: op -> int8 conv" / "fp16", for logs and tests.
  std::string describe() const;

 private:
  void compile();
  void checkInputs(const std::vector<Tensor>& inputs) const;
  SimSlots execute(const std::vector<Tensor>& inputs) const;

  std::unique_ptr<Graph> graph_;
  QuantPlan plan_;
  SimOptions options_;
  SimSlots initial_;  // constants (and int8 copies of constants feeding int8 ops); the rest empty
  std::vector<std::unique_ptr<SimStep>> steps_;
  std::vector<std::string> step_kinds_;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::pair<std::string, int>> float_values_;  // inputs and node outputs of float type
};

}  // namespace npuc::quant
