// What the control-flow ops (If, Loop, Scan) share: binding a node's inputs to its sub-graph,
// comparing a sub-graph's output types with what the op promises, and running a sub-graph on the
// host with its own Executor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_subgraph.h"
#include "opset/registry.h"
#include "runtime/executor.h"

namespace npuc {
namespace control {

// Outputs a control-flow node may have (the schema's cap; ONNX leaves them variadic).
constexpr int kMaxControlOutputs = 1 << 16;

// "node 'n' (Loop)", the prefix of every control-flow error.
std::string tag(const Node& node);

// Binding for input `i` of `node`: its value's type, and its tensor when it is a constant.
SubgraphBinding bindInput(const Node& node, size_t i, const std::string& name = "");
// Bindings for node's implicit inputs (the outer values its sub-graphs read).
std::vector<SubgraphBinding> implicitBindings(const Node& node);

// Throws ShapeError unless sub-graph output `v` is statically shaped.
void requireStatic(const Node& node, const std::string& attr, const Value& v);
// Throws ShapeError unless `v` (a sub-graph output) has exactly dtype/shape `want`: `what` names
// the quantity ("loop-carried value 1").
void requireSameType(const Node& node, const std::string& what, const Value& v, DType dtype, const Shape& shape);

// A sub-graph compiled for the host. Its inputs, in order: the formal inputs, then the node's
// non-constant implicit inputs (constants were bound into it).
class SubgraphRunner {
 public:
  SubgraphRunner(const Node& node, std::unique_ptr<Graph> g);
  // `formal`: views for the formal inputs; implicit views come from `node_inputs` (the kernel's
  // inputs) at the positions of the node's non-constant implicit inputs.
  void run(const std::vector<TensorView>& formal, const std::vector<TensorView>& node_inputs,
           const std::vector<TensorView>& outputs) const;

 private:
  std::unique_ptr<Executor> exec_;
  std::vector<size_t> implicit_positions_;  // node input index of each non-constant implicit input
};

// Whether a boolean tensor holding one element is true (ONNX's cond inputs).
bool readCond(const TensorView& v, const std::string& node_tag, const char* what);

// A Scan node's layout: states, scan inputs and outputs, axes (normalized for the inputs) and
// directions, and the static sequence length. Scan-8 (`batched`) puts a batch axis first on every
// state and scan tensor and an optional sequence_lens input before them; its scan axis is 1.
struct ScanLayout {
  size_t n_state = 0, n_scan_in = 0, n_scan_out = 0;
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
  int64_t length = 0;
  bool batched = false;
  int64_t batch = 1;
  size_t first_state = 0;  // node input index of state 0 (1 for Scan-8: after sequence_lens)
  size_t stateInput(size_t i) const { return first_state + i; }
  size_t scanInput(size_t j) const { return first_state + n_state + j; }
};
ScanLayout scanLayout(const Node& node);
// The body's formal bindings: the states, then each scan input with its scan axis removed (and
// Scan-8's batch axis).
std::vector<SubgraphBinding> scanBodyBindings(const Node& node, const ScanLayout& L);

}  // namespace control

void registerIfOp(OpRegistry& reg);
void registerLoopOp(OpRegistry& reg);
void registerScanOp(OpRegistry& reg);

}  // namespace npuc
