#include "opset/bounded_output.h"

#include <cstring>

#include "common/error.h"
#include "opset/registry.h"

namespace npuc {

bool inputIsConstant(const Node& n, size_t i) {
  return i < n.numInputs() && n.input(i) && n.input(i)->isConstant();
}

int boundedOutputAxis(const Node& node, size_t o) {
  if (o != 0) return -1;
  const OpSchema* schema = OpRegistry::instance().find(node);
  return schema && schema->bounded_axis ? schema->bounded_axis(node) : -1;
}

int64_t boundedExtent(const TensorView& padded, int axis) {
  if (padded.dtype != DType::Int64 || padded.rank() != 2 || axis < 0 || axis > 1) {
    throw ShapeError("a bounded output must be a 2-D int64 tensor, got " +
                     std::string(dtypeName(padded.dtype)) + shapeStr(padded.shape));
  }
  const int64_t* d = padded.as<const int64_t>();
  const int64_t n = padded.shape[static_cast<size_t>(axis)];
  const int64_t step = axis == 0 ? padded.shape[1] : 1;
  if (step == 0) return n;  // no elements per slice: nothing tells padding apart (NonZero of a scalar)
  int64_t k = 0;
  while (k < n && d[k * step] != -1) ++k;
  return k;
}

void checkBoundedOutputs(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    for (size_t o = 0; o < n->numOutputs(); ++o) {
      if (boundedOutputAxis(*n, o) < 0) continue;
      const Value* v = n->output(o);
      const std::string what = "node '" + n->name() + "' (" + n->opType() + "): output '" + v->name() +
                               "' has a data-dependent size (only its upper bound " + shapeStr(v->shape()) +
                               " is known when compiling), so it may only be a graph output";
      if (!v->uses().empty()) {
        const Node* user = v->uses().front().user;
        throw UnsupportedOpError(
            what + ", but node '" + user->name() + "' (" + user->opType() +
            ") reads it; make its inputs constant or move the consumer out of the model");
      }
      if (!v->isGraphOutput()) throw UnsupportedOpError(what + ", and it is not one");
    }
  }
}

std::vector<int> boundedAxesOfOutputs(const Graph& graph) {
  std::vector<int> axes(graph.outputs().size(), -1);
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* v = graph.outputs()[i];
    const Node* n = v->producer();
    if (!n) continue;
    for (size_t o = 0; o < n->numOutputs(); ++o) {
      if (n->output(o) == v) axes[i] = boundedOutputAxis(*n, o);
    }
  }
  return axes;
}

void trimBoundedOutputs(const Graph& graph, std::vector<Tensor>& outputs) {
  const std::vector<int> axes = boundedAxesOfOutputs(graph);
  for (size_t i = 0; i < axes.size() && i < outputs.size(); ++i) {
    if (axes[i] < 0) continue;
    Tensor& t = outputs[i];  // int64, or float32 where a simulator hands every output back as float
    if (t.rank() != 2)
      throw ShapeError("bounded output " + std::to_string(i) + " is not 2-D: " + shapeStr(t.shape()));
    const int axis = axes[i];
    const int64_t n = t.dim(axis), step = axis == 0 ? t.dim(1) : 1;
    int64_t k = 0;
    if (step == 0) {
      k = n;
    } else {
      while (k < n && t.doubleAt(k * step) != -1.0) ++k;
    }
    Shape s = t.shape();
    s[static_cast<size_t>(axis)] = k;
    Tensor trimmed(t.dtype(), s);
    const size_t es = dtypeSize(t.dtype());
    const auto* src = static_cast<const uint8_t*>(t.raw());
    auto* dst = static_cast<uint8_t*>(trimmed.raw());
    if (axis == 0) {
      std::memcpy(dst, src, trimmed.nbytes());
    } else {
      for (int64_t r = 0; r < s[0]; ++r) std::memcpy(dst + r * k * es, src + r * t.dim(1) * es, k * es);
    }
    t = std::move(trimmed);
  }
}

}  // namespace npuc
