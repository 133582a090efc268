#include "frontend/import_options.h"

#include <algorithm>

namespace npuc {

namespace {

std::string quotedList(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

std::vector<std::string> inputNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Value* v : g.inputs()) names.push_back(v->name());
  return names;
}

void fixInputShape(Value* in, const Shape& given) {
  auto mismatch = [&](const std::string& why) {
    return ModelLoadError("input_size_list entry for input '" + in->name() + "' is " + shapeStr(given) +
                          " but the model declares " + shapeStr(in->shape()) + ": " + why);
  };
  for (int64_t d : given) {
    if (d <= 0) throw mismatch("every dim must be a positive number");
  }
  if (in->hasShape()) {
    if (in->rank() != static_cast<int64_t>(given.size())) throw mismatch("the ranks differ");
    // Dim 0 is the batch: a model exported at a fixed batch may be loaded at another (issue #18,
    // RKNN's batch in input_size_list); shape inference then re-derives every tensor from it.
    for (size_t i = 1; i < given.size(); ++i) {
      const int64_t declared = in->shape()[i];
      if (declared >= 0 && declared != given[i]) throw mismatch("dim " + std::to_string(i) + " differs");
    }
  }
  in->setType(in->dtype(), given);
}

// A handful of tensor names, to help a user who mistyped one.
std::string someTensorNames(const Graph& g) {
  constexpr size_t kShown = 8;
  std::vector<std::string> names;
  for (const Value* v : g.inputs()) names.push_back(v->name());
  for (const Node* n : g.nodes()) {
    for (const Value* v : n->outputs()) names.push_back(v->name());
  }
  std::string s =
      quotedList(std::vector<std::string>(names.begin(), names.begin() + std::min(kShown, names.size())));
  if (names.size() > kShown) s += ", ... (" + std::to_string(names.size() - kShown) + " more)";
  return s;
}

}  // namespace

void applyInputSizes(Graph& graph, const ImportOptions& opts) {
  if (opts.input_sizes.empty()) {
    if (!opts.input_names.empty()) throw ModelLoadError("input_names is given without input_size_list");
    return;
  }
  const std::vector<std::string> names = opts.input_names.empty() ? inputNames(graph) : opts.input_names;
  if (names.size() != opts.input_sizes.size()) {
    throw ModelLoadError("input_size_list has " + std::to_string(opts.input_sizes.size()) + " shape(s) for " +
                         std::to_string(names.size()) + " input(s) " + quotedList(names));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    Value* v = graph.findValue(names[i]);
    if (!v || !v->isGraphInput()) {
      throw ModelLoadError("input_size_list names '" + names[i] +
                           "', which is not a graph input; the inputs are " + quotedList(inputNames(graph)));
    }
    fixInputShape(v, opts.input_sizes[i]);
  }
}

void cutAtOutputs(Graph& graph, const std::vector<std::string>& names) {
  std::vector<Value*> outs;
  for (const auto& name : names) {
    Value* v = graph.findValue(name);
    if (!v) {
      throw ModelLoadError("output '" + name + "' is not a tensor of the model; tensors include " +
                           someTensorNames(graph));
    }
    outs.push_back(v);
  }
  while (!graph.outputs().empty()) graph.removeOutput(graph.outputs().size() - 1);
  for (Value* v : outs) graph.addOutput(v);
  // Nodes are sorted, so a reverse sweep removes whole unneeded chains.
  std::vector<Node*> nodes = graph.nodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    if (std::none_of(n->outputs().begin(), n->outputs().end(),
                     [](Value* v) { return v->numConsumers() > 0; })) {
      graph.eraseNode(n);
    }
  }
  for (size_t i = graph.inputs().size(); i-- > 0;) {
    const Value* in = graph.inputs()[i];
    if (in->numConsumers() == 0) graph.removeInput(i);
  }
  graph.removeUnusedValues();
}

std::string dynamicInputHint(const Graph& graph) {
  std::vector<std::string> names;
  std::string shapes;
  for (const Value* in : graph.inputs()) {
    if (in->shapeIsStatic()) continue;
    names.push_back(in->name());
    shapes += (shapes.empty() ? "" : ", ") + (in->hasShape() ? shapeStr(in->shape()) : std::string("[?]"));
  }
  if (names.empty()) return "";
  std::string quoted;
  for (const auto& n : names) quoted += (quoted.empty() ? "'" : ", '") + n + "'";
  return " The model has dynamic inputs; fix them at load with input_size_list, replacing every '?' by its "
         "size: inputs=[" +
         quoted + "], input_size_list=[" + shapes + "].";
}

namespace {

// A static value larger than kMaxTensorBytes could never be allocated (Tensor refuses it), so the
// model is refused at load, before the executor plans or allocates anything for it.
void requireAllocatable(const Value& v, const std::string& what) {
  if (!v.shapeIsStatic()) return;
  const int64_t elem_bytes = std::max<int64_t>(static_cast<int64_t>(dtypeSize(v.dtype())), 1);
  const int64_t limit = kMaxTensorBytes / elem_bytes;
  if (shapeNumel(v.shape()) > limit) {
    throw ResourceError("tensor '" + v.name() + "' (" + what + ") is " + dtypeName(v.dtype()) +
                        shapeStr(v.shape()) + ", which exceeds the " + std::to_string(kMaxTensorBytes >> 30) +
                        " GiB tensor limit");
  }
}

}  // namespace

void requireStaticShapes(const Graph& graph) {
  for (const Value* v : graph.inputs()) requireAllocatable(*v, "graph input");
  for (const Node* n : graph.nodes()) {
    for (const Value* v : n->outputs()) {
      if (v->shapeIsStatic()) {
        requireAllocatable(*v, "output of node '" + n->name() + "', " + n->opType());
        continue;
      }
      throw ShapeError("tensor '" + v->name() + "' (output of node '" + n->name() + "', " + n->opType() +
                       ") has unknown shape " + (v->hasShape() ? shapeStr(v->shape()) : std::string("[?]")) +
                       " after shape inference." + dynamicInputHint(graph));
    }
  }
  const std::string hint = dynamicInputHint(graph);
  if (!hint.empty()) throw ShapeError("the model still has dynamic inputs." + hint);
}

}  // namespace npuc
