#include "quant/sim/node_kernel.h"

#include <cstdint>

#include "common/error.h"
#include "opset/eval.h"
#include "quant/sim/scratch.h"

namespace npuc::quant {

std::unique_ptr<NodeKernel> NodeKernel::tryBuild(const Node& node) {
  try {
    const OpSchema* schema = OpRegistry::instance().find(node);
    if (!schema || !schema->make_kernel) return nullptr;
    const auto inputs = static_cast<int>(node.numInputs()), outputs = static_cast<int>(node.numOutputs());
    if (inputs < schema->min_inputs || (schema->max_inputs >= 0 && inputs > schema->max_inputs) ||
        outputs < schema->min_outputs || outputs > schema->max_outputs)
      return nullptr;  // evalNode's arity error
    KernelContext kctx{node, {}, {}};
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const Value* v = node.input(i);
      if (!v) {
        kctx.input_types.emplace_back();
        continue;
      }
      if (!v->shapeIsStatic()) return nullptr;
      void* data = v->isConstant() ? const_cast<void*>(v->constant().raw()) : nullptr;
      kctx.input_types.emplace_back(data, v->dtype(), v->shape());
    }
    for (const Value* out : node.outputs()) {
      if (!out->shapeIsStatic()) return nullptr;
      kctx.output_types.emplace_back(nullptr, out->dtype(), out->shape());
    }
    std::unique_ptr<Kernel> kernel = schema->make_kernel(kctx);
    if (!kernel) return nullptr;
    return std::unique_ptr<NodeKernel>(new NodeKernel(node, std::move(kernel), std::move(kctx.output_types)));
  } catch (const Error&) {
    return nullptr;  // evalNode raises it, with the node named, when the step runs
  }
}

std::vector<Tensor> NodeKernel::run(const std::vector<const Tensor*>& inputs) const {
  try {
    std::vector<TensorView> in_views, out_views;
    for (size_t i = 0; i < node_.numInputs(); ++i) {
      const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
      in_views.push_back(t ? TensorView(*t) : TensorView());
    }
    std::vector<Tensor> outs;
    for (const TensorView& o : outputs_) {
      outs.emplace_back(o.dtype, o.shape);  // zero-filled, as evalNode hands them over
      out_views.emplace_back(outs.back());
    }
    auto* scratch = static_cast<uint8_t*>(threadScratch(kernel_->workspaceBytes() + kTensorAlignment));
    void* workspace = scratch + (kTensorAlignment - reinterpret_cast<uintptr_t>(scratch) % kTensorAlignment);
    kernel_->run(KernelIO{in_views, out_views, workspace});
    return outs;
  } catch (const Error&) {
    rethrowWithNodeContext(node_);
  }
}

std::vector<Tensor> runNode(const NodeKernel* kernel, const Node& node,
                            const std::vector<const Tensor*>& inputs) {
  return kernel ? kernel->run(inputs) : evalNode(node, inputs);
}

}  // namespace npuc::quant
