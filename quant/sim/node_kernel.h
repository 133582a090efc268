// A node's host kernel built once, for the simulator steps that compute in float (FP16 nodes,
// shared-scale data movement, shape arithmetic). evalNode builds the kernel on every call: for a
// ConvTranspose that is a oneDNN primitive and a weight reorder per inference, which cost far
// more than the computation (ppocrv4_det: 160 of 1240 ms per run). The kernel and its run are
// evalNode's own, so the outputs are the same bits.
#pragma once
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "opset/registry.h"

namespace npuc::quant {

class NodeKernel {
 public:
  // The kernel of `node`, or null when it cannot be built ahead (no host kernel, a shape not
  // static): the caller then runs evalNode, which reports the problem at run time as before.
  static std::unique_ptr<NodeKernel> tryBuild(const Node& node);

  // evalNode(node, inputs) on the prepared kernel (its workspace is the thread's scratch).
  std::vector<Tensor> run(const std::vector<const Tensor*>& inputs) const;

 private:
  NodeKernel(const Node& node, std::unique_ptr<Kernel> kernel, std::vector<TensorView> outputs)
      : node_(node), kernel_(std::move(kernel)), outputs_(std::move(outputs)) {}

  const Node& node_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<TensorView> outputs_;  // dtype and shape of each output (data null)
};

// NodeKernel::run when `kernel` is set, else evalNode.
std::vector<Tensor> runNode(const NodeKernel* kernel, const Node& node,
                            const std::vector<const Tensor*>& inputs);

}  // namespace npuc::quant
