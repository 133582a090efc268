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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "quant/sim/sim_step.h"
#include "runtime/run_memory.h"

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
  // dequantized to float32. Throws InputError naming the input on a count/dtype/shape mismatch,
  // ResourceError, before the run allocates, when runFootprint() exceeds `limits` or the memory
  // available. Safe to call from several threads.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunMemoryLimits& limits = {}) const;
  // What run() holds (runtime/run_memory.h): the run keeps every activation until it ends, each in
  // the simulator's representation (simDType), plus each graph output handed back as float32
  // (dequantized, or the copy the caller makes of it: the Python binding's numpy array).
  const RunFootprint& runFootprint() const { return footprint_; }
  // The element type the simulator holds value `v` in: int8 for a float value the INT8 plan
  // quantizes, its own dtype otherwise (FP16 mode keeps half-rounded float32).
  DType simDType(const Value& v) const;
  // Every float value of the run (graph inputs and node outputs), dequantized, by value name:
  // what the accuracy analysis compares layer by layer.
  std::map<std::string, Tensor> runAllValues(const std::vector<Tensor>& inputs) const;
  // The "single" (isolated) run of the accuracy analysis: every node's step reads the FP32
  // values of its float inputs from `golden` (by value name: graph inputs and node outputs),
  // quantized with those inputs' planned parameters (INT8) or rounded to half (FP16), so each
  // node's output shows its own error only, not what accumulated upstream. Non-float inputs
  // (shapes, indices) are computed exactly by the run itself. Returns every float node output,
  // dequantized, by value name. Throws InputError naming a float value missing from `golden`.
  // `after_step(k)`, if given, is called after step k (progress of a long analysis).
  std::map<std::string, Tensor> runEachNodeIsolated(const std::vector<Tensor>& inputs,
                                                    const std::map<std::string, Tensor>& golden,
                                                    const std::function<void(size_t)>& after_step = {}) const;

  const Graph& graph() const { return *graph_; }
  SimMode mode() const { return options_.mode; }
  const QuantPlan& plan() const { return plan_; }

  // ---- The compiled steps one by one, for the program runtime (runtime/program_runtime.h),
  // which runs them in the lowered program's task order over its own activation arena.
  // The slots before a run: constants bound, every activation empty.
  const SimSlots& initialSlots() const { return initial_; }
  // The slot of a graph value (input, node output or constant) by name; -1 when there is none.
  int slotOf(const std::string& value) const;
  size_t numSteps() const { return steps_.size(); }
  // Runs the step of the graph node at `node_index` (graph order; one step per node).
  void runStep(size_t node_index, SimSlots& slots) const { steps_[node_index]->run(slots); }
  // Graph input `index` as the simulator holds it: quantized with its plan entry (INT8), rounded
  // to half (float), as is (non-float): what run() does at the graph boundary.
  SimValue inputToSim(size_t index, const Tensor& t) const;
  // InputError naming the input on a count/dtype/shape mismatch.
  void checkInputs(const std::vector<Tensor>& inputs) const;
  // Per node: "name: op -> int8 conv" / "fp16", for logs and tests.
  std::string describe() const;

 private:
  void compile();
  SimSlots execute(const std::vector<Tensor>& inputs) const;
  // A float value as the simulator holds it: quantized with its plan entry (INT8 mode), or
  // rounded to half (FP16 mode, or a float value the plan does not quantize).
  SimValue toSimFloat(const Value& v, const Tensor& t) const;

  std::unique_ptr<Graph> graph_;
  // FP16 mode: the graph the steps are built on, graph_'s clone with half-rounded MAC weights.
  std::unique_ptr<Graph> step_graph_;
  QuantPlan plan_;
  SimOptions options_;
  SimSlots initial_;  // constants (and int8 copies of constants feeding int8 ops); the rest empty
  std::vector<std::unique_ptr<SimStep>> steps_;
  std::vector<std::string> step_kinds_;
  // Per step, the non-constant float values it reads and writes, with their slots: what
  // runEachNodeIsolated overwrites before the step and collects after it.
  struct StepFloatValues {
    std::vector<std::pair<const Value*, int>> inputs, outputs;
  };
  std::vector<StepFloatValues> step_float_values_;
  RunFootprint footprint_;
  std::vector<int> input_slots_, output_slots_;
  std::map<std::string, int> slot_by_name_;                // every graph value's slot (slotOf)
  std::vector<std::pair<std::string, int>> float_values_;  // inputs and node outputs of float type
};

}  // namespace npuc::quant
