// User-defined ops: RKNN-Toolkit2's reg_custom_op. An op npuc does not know, whose shape inference
// and FP32 computation the user supplies (Python callbacks through the bindings, or C++ functions).
//
// What npuc decides for such an op, once, here and in its traits:
//  * it runs on the CPU (OpTrait::UserDefined: the partitioner cannot see into the user's code);
//  * an INT8 model dequantizes around it, as around every op without an int8 kernel;
//  * it is never constant-folded or merged with a twin: the user's compute runs at inference, as
//    on the board, where the .rknn keeps the node for the user's C implementation;
//  * the blob keeps the node by op type, domain and attributes, so loading it needs the same
//    registration (the loader names the op when it is missing).
//
// A set is immutable once built and travels with the graph that uses it (Graph::custom_ops, copied
// by clone()). Every lookup of a node's op (shape inference, the FP32 executor, the simulator's
// float steps, on whatever thread they run) finds the definitions through the node's graph, so
// two toolkits in one process can register different ops without a process-wide registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "opset/registry.h"

namespace npuc {

struct CustomOpDef {
  struct IoType {
    DType dtype = DType::Undefined;
    Shape shape;
  };
  // Output types from the input types; the node gives attributes and names. Must return one entry
  // per node output.
  using InferFn = std::function<std::vector<IoType>(const Node& node, const std::vector<IoType>& inputs)>;
  // Fills `outputs` (allocated with the inferred types) from `inputs`. Called from any thread; may
  // allocate (unlike npuc's own kernels).
  using ComputeFn =
      std::function<void(const Node& node, const std::vector<TensorView>& inputs, std::vector<TensorView>& outputs)>;

  std::string op_type;  // matched against a node's op type in any domain (RKNN matches the name only)
  InferFn infer;
  ComputeFn compute;
};

class CustomOpSet {
 public:
  // Throws ConfigError for an empty or duplicate op type, a missing callback, or a name npuc
  // already defines (a custom op cannot replace a built-in one).
  explicit CustomOpSet(std::vector<CustomOpDef> defs);

  // The schema of a custom op of this type, or null.
  const OpSchema* find(const std::string& op_type) const;
  std::vector<std::string> opTypes() const;  // sorted
  bool empty() const { return schemas_.empty(); }

 private:
  std::map<std::string, std::unique_ptr<OpSchema>> schemas_;
};

}  // namespace npuc
