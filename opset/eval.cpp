#include "opset/eval.h"

#include <unordered_map>

namespace npuc {

std::string nodeErrorPrefix(const Node& node) {
  return "node '" + node.name() + "' (" + node.opType() + "): ";
}

void rethrowWithNodeContext(const Node& node) {
  const std::string tag = nodeErrorPrefix(node);
  // A message that already starts with the node (control-flow ops name it in errors raised both
  // here and outside inference) is not prefixed twice.
  auto with = [&tag](const char* what) {
    const std::string w = what;
    return w.compare(0, tag.size(), tag) == 0 ? w : tag + w;
  };
  try {
    throw;
  } catch (const UnsupportedOpError&) {
    throw;  // already names the node
  } catch (const ShapeError& e) {
    throw ShapeError(with(e.what()));
  } catch (const ResourceError& e) {
    throw ResourceError(with(e.what()));
  } catch (const GraphError& e) {
    throw GraphError(with(e.what()));
  } catch (const InputError& e) {
    throw InputError(with(e.what()));
  } catch (const Error& e) {
    throw Error(with(e.what()));
  }
}

namespace {

void checkArity(const Node& node, const OpSchema& s) {
  const int n_in = static_cast<int>(node.numInputs());
  const int n_out = static_cast<int>(node.numOutputs());
  if (n_in < s.min_inputs || (s.max_inputs >= 0 && n_in > s.max_inputs)) {
    throw GraphError("has " + std::to_string(n_in) + " inputs, expected " + std::to_string(s.min_inputs) +
                     (s.max_inputs < 0 ? " or more" : " to " + std::to_string(s.max_inputs)));
  }
  if (n_out < s.min_outputs || n_out > s.max_outputs) {
    throw GraphError("has " + std::to_string(n_out) + " outputs, expected " + std::to_string(s.min_outputs) +
                     " to " + std::to_string(s.max_outputs));
  }
}
}  // namespace

void inferNode(Node& node) {
  const OpSchema& s = OpRegistry::instance().require(node);
  try {
    checkArity(node, s);
    if (!s.infer) throw ShapeError("op has no shape inference");
    InferContext ctx(node);
    s.infer(ctx);
  } catch (const Error&) {
    rethrowWithNodeContext(node);
  }
}

std::vector<Tensor> evalNode(const Node& node, const std::vector<const Tensor*>& inputs) {
  const OpSchema& s = OpRegistry::instance().require(node);
  try {
    checkArity(node, s);
    if (!s.make_kernel) throw UnsupportedOpError("op has no host kernel");
    KernelContext kctx{node, {}, {}};
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
      kctx.input_types.push_back(t ? TensorView(*t) : TensorView());
      if (t && !node.input(i)->isConstant()) kctx.input_types.back().data = nullptr;
    }
    for (Value* out : node.outputs()) {
      if (!out->shapeIsStatic()) throw ShapeError("output '" + out->name() + "' has no static shape");
      kctx.output_types.push_back(TensorView(nullptr, out->dtype(), out->shape()));
    }
    std::unique_ptr<Kernel> k = s.make_kernel(kctx);
    std::vector<Tensor> outs;
    std::vector<TensorView> in_views, out_views;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
      in_views.push_back(t ? TensorView(*t) : TensorView());
    }
    for (auto& ot : kctx.output_types) {
      outs.emplace_back(ot.dtype, ot.shape);
      out_views.emplace_back(outs.back());
    }
    std::vector<uint8_t> ws(k->workspaceBytes() + kTensorAlignment);
    void* wsp = ws.data() + (kTensorAlignment - reinterpret_cast<uintptr_t>(ws.data()) % kTensorAlignment);
    k->run(KernelIO{in_views, out_views, wsp});
    return outs;
  } catch (const Error&) {
    rethrowWithNodeContext(node);
  }
}

std::vector<Tensor> evalGraph(const Graph& graph, const std::map<std::string, Tensor>& feeds) {
  std::unordered_map<const Value*, Tensor> env;
  for (Value* in : graph.inputs()) {
    auto it = feeds.find(in->name());
    if (it == feeds.end()) throw InputError("no value fed for graph input '" + in->name() + "'");
    env[in] = it->second;
  }
  auto lookup = [&](const Value* v) -> const Tensor* {
    if (!v) return nullptr;
    if (v->isConstant()) return &v->constant();
    auto it = env.find(v);
    if (it == env.end()) throw GraphError("value '" + v->name() + "' read before it was computed");
    return &it->second;
  };
  for (Node* n : graph.nodes()) {
    std::vector<const Tensor*> ins;
    for (Value* v : n->inputs()) ins.push_back(lookup(v));
    std::vector<Tensor> outs = evalNode(*n, ins);
    for (size_t i = 0; i < outs.size(); ++i) env[n->output(i)] = std::move(outs[i]);
  }
  std::vector<Tensor> result;
  for (Value* out : graph.outputs()) result.push_back(*lookup(out));
  return result;
}

}  // namespace npuc
