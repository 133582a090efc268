// The FP32 host runtime: a graph compiled once into kernels plus a static memory plan, then run
// many times with no heap allocation per run.
//
// Storage: graph inputs are read from the caller's buffers and graph outputs written into the
// caller's buffers (also when later nodes read them); every other non-constant value gets a
// 64-byte-aligned offset in one activation arena, placed from live ranges (first write to last
// read, in topological order). A node whose kernel is a pure reinterpretation (Kernel::aliasInput)
// and whose output is not a graph output shares its input's storage and is skipped at run time;
// the shared arena buffer lives until the last read of either value. Runs take an arena from a
// mutex-protected pool, so concurrent runs never share one. Caller buffers must not overlap.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/registry.h"
#include "runtime/run_memory.h"

namespace npuc {

struct IoInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

// Compile-time switches of the executor. The defaults are what users get.
struct ExecutorOptions {
  // Rewrite Conv (+Add) (+activation) chains into ai.npuc ConvAct before planning (host speed
  // only; results are unchanged). Only this option decides: the NPUC_HOST_FUSION environment
  // variable is read at the Python edge (npuc.Runtime), never inside the library.
  bool host_fusion = true;
  // With host_fusion: store activations between chained 2-D convolutions channels-last
  // (runtime/host_layout.h). Off gives the NCHW-everywhere execution, for differential tests.
  bool channels_last = true;
  // Graphs with fewer multiply-accumulates than this run their kernels on one OpenMP thread
  // whatever OMP_NUM_THREADS says: each parallel region wakes the other threads, and below about
  // a millisecond of work those wake-ups cost more than the split saves (measured on a loaded
  // 2-core machine: yolo_focus, 33M MACs, ran 2.3x slower on 2 threads than ONNX Runtime;
  // shufflenet_v2_x0_5, 40M, ran faster). 0 never forces one thread.
  int64_t serial_below_macs = 35'000'000;
};

// Where one activation buffer of the arena sits and when it is live (for tests and reports).
// Values that alias another value's storage (Reshape & co.) are listed with the buffer they share.
struct PlannedBuffer {
  std::vector<std::string> values;  // the value that owns the buffer first, then its aliases
  size_t offset = 0;                // in the arena, a multiple of kTensorAlignment
  size_t bytes = 0;                 // as used (not rounded)
  int64_t first_step = 0;           // index of the node that writes it
  int64_t last_step = 0;            // index of the last node that reads it
};

struct MemoryPlanStats {
  size_t arena_bytes = 0;        // size of the activation arena
  size_t lower_bound_bytes = 0;  // max over time of the sum of live activation bytes (as allocated,
                                 // each rounded up to kTensorAlignment)
  size_t workspace_bytes = 0;    // largest kernel scratch area
  size_t constant_bytes = 0;     // weights and other constants
};

// One node's share of a profiled run (Executor::profile).
struct NodeTiming {
  std::string node;     // the compiled graph's node name (fused nodes carry their Conv's name + "_act")
  std::string op_type;  // e.g. "Conv", "ConvAct", "Add"
  double ms = 0.0;      // mean wall time per run; 0 for steps skipped as aliases
};

class Executor {
 public:
  // Compiles `graph` (shapes must be static; the graph is cloned, the caller keeps its own).
  explicit Executor(const Graph& graph);
  Executor(const Graph& graph, const ExecutorOptions& options);
  ~Executor();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const MemoryPlanStats& memoryStats() const;
  // The arena plan, one entry per buffer, and the graph as compiled (after host fusion); step
  // indices count the compiled graph's nodes in order.
  const std::vector<PlannedBuffer>& memoryPlan() const;
  const Graph& compiledGraph() const;
  // Nodes whose run is skipped because their output aliases their input.
  size_t numAliasedSteps() const;

  // Runs on caller-provided buffers. Inputs are read in place (zero copy) and outputs written in
  // place. Throws InputError naming the input when a count, dtype or shape is wrong.
  // Safe to call from several threads at once.
  void run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs) const;
  // Runs `runs` times like run() and returns each compiled node's mean wall time, in step order.
  // Opt-in: run() itself reads no clock. Throws InputError when runs < 1.
  std::vector<NodeTiming> profile(const std::vector<TensorView>& inputs,
                                  const std::vector<TensorView>& outputs, int runs) const;
  // Convenience form that allocates the outputs, after checkRunMemory(limits).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunMemoryLimits& limits = {}) const;
  // What one run holds (run_memory.h): every output (the caller's buffers, allocated per run)
  // and the activation arena with the kernel workspace (pooled: reused by later runs).
  const RunFootprint& runFootprint() const;
  // ResourceError, before anything is allocated, when a run would exceed `limits` or the memory
  // available (run_memory.h). run(inputs, limits) calls it; callers allocating the outputs
  // themselves call it first.
  void checkRunMemory(const RunMemoryLimits& limits) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace npuc
