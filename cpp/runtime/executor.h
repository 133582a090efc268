// The FP32 host runtime: a graph compiled once into kernels plus a static memory plan, then run
// many times with no heap allocation per run.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/registry.h"

namespace npuc {

struct IoInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

struct MemoryPlanStats {
  size_t arena_bytes = 0;        // size of the activation arena
  size_t lower_bound_bytes = 0;  // max over time of the sum of live activation bytes
  size_t workspace_bytes = 0;    // largest kernel scratch area
  size_t constant_bytes = 0;     // weights and other constants
};

class Executor {
 public:
  // Compiles `graph` (shapes must be static; the graph is cloned, the caller keeps its own).
  explicit Executor(const Graph& graph);
  ~Executor();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const MemoryPlanStats& memoryStats() const;

  // Runs on caller-provided buffers. Inputs are read in place (zero copy) and outputs written in
  // place. Throws InputError naming the input when a count, dtype or shape is wrong.
  // Safe to call from several threads at once.
  void run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs) const;
  // Convenience form that allocates the outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace npuc
