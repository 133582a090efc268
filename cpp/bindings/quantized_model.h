// The C++ side of the Python QuantizedModel: a model on the bit-exact INT8 (or FP16) simulator,
// run by a loaded blob's compiled program over its planned arena when it has one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "quant/graph/quant_plan.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/program_runtime.h"

namespace npuc::bindings {

using quant::QuantizedExecutor;

class PyQuantizedModel {
 public:
  PyQuantizedModel(std::shared_ptr<const QuantizedExecutor> sim, quant::QuantPlan plan)
      : sim_(std::move(sim)), plan_(std::move(plan)) {}
  const QuantizedExecutor& sim() const { return *sim_; }
  const std::shared_ptr<const QuantizedExecutor>& sharedSim() const { return sim_; }
  const quant::QuantPlan& plan() const { return plan_; }
  // A loaded blob's compiled program over its planned arena (run() uses it), or null with why.
  const runtime::ProgramRuntime* program() const { return program_.get(); }
  const std::string& programNote() const { return program_note_; }
  void setProgram(std::shared_ptr<const runtime::ProgramRuntime> program, std::string note) {
    program_ = std::move(program);
    program_note_ = std::move(note);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunMemoryLimits& limits) const {
    return program_ ? program_->run(inputs, limits) : sim_->run(inputs, limits);
  }

 private:
  std::shared_ptr<const QuantizedExecutor> sim_;
  quant::QuantPlan plan_;
  std::shared_ptr<const runtime::ProgramRuntime> program_;
  std::string program_note_ = "built in memory: the simulator runs the graph node by node";
};

}  // namespace npuc::bindings
